"""submission_create: one transaction for Submission + Kernels + Evaluations, messages only after commit."""

from __future__ import annotations

import pytest

from catalogue.models import LLM, Kernel, Problem, Submission
from evaluator.models import Evaluation
from evaluator.services import queues
from leaderboard.bundles import BundleError
from leaderboard.services.llms import llm_get_or_create
from leaderboard.services.submissions import submission_create
from tests.pipeline.helpers import DEMO_SET, demo_kernel, jsonl, kernel_name, make_zip

pytestmark = pytest.mark.django_db


def create(data: bytes, filename: str = "run.zip", **kw):
    kw.setdefault("problem_set", DEMO_SET)
    return submission_create(uploader=None, llm_name=kw.pop("llm", "model-a"), filename=filename, data=data, **kw)


def counts() -> tuple[int, int, int]:
    return Submission.objects.count(), Kernel.objects.count(), Evaluation.objects.count()


def test_stores_everything_and_enqueues_after_commit(demo_problems, sent, django_capture_on_commit_callbacks) -> None:
    data = make_zip({kernel_name(1, 1): demo_kernel(1, 1), kernel_name(2, 1, 1): demo_kernel(2, 1, 1)})
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        submission = create(data, hardware="cpu", notes="n")
        assert sent.calls == []  # nothing leaves before the commit
    for callback in callbacks:
        callback()
    assert submission.kernel_count == 2
    assert submission.status == Submission.Status.RECEIVED
    assert submission.bundle_format == "zip" and len(submission.bundle_sha256) == 64
    evaluations = list(Evaluation.objects.filter(kernel__submission=submission).order_by("pk"))
    assert [e.status for e in evaluations] == ["queued", "queued"]
    assert {e.hardware for e in evaluations} == {"cpu"}
    assert sorted(sent.ids) == [e.pk for e in evaluations]
    assert {c["queue"] for c in sent.calls} == {"eval-cpu"}
    assert [c["task_id"] for c in sent.calls] == [e.task_id for e in evaluations]
    limits = queues.time_limits()
    assert limits.harness < limits.soft < limits.hard
    assert all(c["soft_time_limit"] == limits.soft and c["time_limit"] == limits.hard for c in sent.calls)
    kernel = Kernel.objects.get(submission=submission, sample=1)
    assert kernel.problem.key == "L2/1" and kernel.source == demo_kernel(2, 1, 1)
    # One static-audit message for the whole upload, naming every kernel.
    assert [sorted(args[0]) for args in sent.audits] == [sorted(k.pk for k in submission.kernels.all())]


def test_static_audit_of_an_upload_flags_the_hack_and_not_the_correct_kernel(demo_problems, sent) -> None:
    from evaluator.models import AuditFlag
    from evaluator.tasks.audit import audit_kernels_static

    submission = create(make_zip({kernel_name(1, 1): demo_kernel(1, 1), kernel_name(1, 1, 1): demo_kernel(1, 1, 1)}))
    audit_kernels_static.run(list(submission.kernels.values_list("pk", flat=True)))  # what the worker runs
    hack = Kernel.objects.get(submission=submission, sample=1)  # the shape-guard identity
    clean = Kernel.objects.get(submission=submission, sample=0)
    assert AuditFlag.objects.filter(kernel=hack, source="rule", severity__in=["medium", "high"]).exists()
    assert not AuditFlag.objects.filter(kernel=clean, verdict__in=["suspicious", "hack"]).exists()


def test_hardware_picks_the_queue(demo_problems, sent, django_capture_on_commit_callbacks, settings) -> None:
    settings.EVALUATOR_HARDWARE_LABELS = ["cpu", "h200"]
    with django_capture_on_commit_callbacks(execute=True):
        create(make_zip({kernel_name(1, 1): demo_kernel(1, 1)}), hardware="H200")
    assert [c["queue"] for c in sent.calls] == ["eval-h200"]


def test_unknown_problems_and_duplicates_are_reported_per_file(demo_problems, sent) -> None:
    data = jsonl(
        [
            {"level": 1, "problem_id": 1, "source": demo_kernel(1, 1)},
            {"level": 1, "problem_id": 99, "source": demo_kernel(1, 1)},
            {"level": 1, "problem_id": 1, "source": demo_kernel(1, 1)},
        ]
    )
    submission = create(data, filename="k.jsonl")
    assert submission.kernel_count == 1
    by_name = {r["name"]: r for r in submission.report}
    assert by_name["line 1"]["status"] == "accepted"
    assert by_name["line 2"]["reason"] == "unknown problem L1/99 in problem set demo"
    assert by_name["line 3"]["reason"].startswith("duplicate of line 1")


def test_nothing_known_rejects_and_stores_nothing(demo_problems) -> None:
    with pytest.raises(BundleError, match="No kernel in the bundle matches") as info:
        create(make_zip({kernel_name(7, 1): demo_kernel(1, 1)}))
    assert info.value.report[0]["reason"] == "unknown problem L7/1 in problem set demo"
    assert counts() == (0, 0, 0)
    assert not LLM.objects.exists()


def test_failure_inside_the_transaction_leaves_nothing_behind(demo_problems, monkeypatch) -> None:
    import leaderboard.services.submissions as service

    def explode(**kwargs):
        raise RuntimeError("broker down while registering")

    monkeypatch.setattr(service, "evaluations_enqueue", explode)
    with pytest.raises(RuntimeError):
        create(make_zip({kernel_name(1, 1): demo_kernel(1, 1)}), llm="brand-new")
    assert counts() == (0, 0, 0)
    assert not LLM.objects.filter(name="brand-new").exists()


def test_only_the_latest_problem_source_is_matched(demo_problems, sent) -> None:
    old = Problem.objects.get(problem_set=DEMO_SET, level=1, problem_id=1)
    Problem.objects.filter(pk=old.pk).update(is_latest=False)
    new = Problem.objects.create(
        problem_set=DEMO_SET, level=1, problem_id=1, name="ReLU v2", source=old.source + "\n# v2", sha256="f" * 64
    )
    submission = create(make_zip({kernel_name(1, 1): demo_kernel(1, 1)}))
    assert Kernel.objects.get(submission=submission).problem_id == new.pk


def test_problem_set_and_hardware_are_validated(demo_problems) -> None:
    data = make_zip({kernel_name(1, 1): demo_kernel(1, 1)})
    with pytest.raises(BundleError, match="Unknown problem set"):
        create(data, problem_set="nope")
    with pytest.raises(BundleError, match="Invalid hardware"):
        create(data, hardware="../../etc")
    with pytest.raises(BundleError, match="LLM needs a name"):
        create(data, llm="   ")
    assert counts() == (0, 0, 0)


def test_default_problem_set_comes_from_settings(demo_problems, settings, sent) -> None:
    settings.PROBLEM_SET_DEFAULT = DEMO_SET
    submission = submission_create(
        uploader=None, llm_name="m", filename="k.py", data=demo_kernel(1, 2).encode(), level=1, problem_id=2
    )
    assert submission.problem_set == DEMO_SET and submission.hardware == settings.EVALUATOR_DEFAULT_HARDWARE


def test_llm_is_reused_case_insensitively_and_blanks_filled(db) -> None:
    first = llm_get_or_create(name="  GPT  X ")
    again = llm_get_or_create(name="gpt x", organisation="Lab")
    assert first.pk == again.pk and first.name == "GPT X"
    assert LLM.objects.get(pk=first.pk).organisation == "Lab"
    assert llm_get_or_create(name="gpt x", organisation="Other").organisation == "Lab"


def test_same_bundle_twice_is_one_submission_unless_asked(demo_problems, sent) -> None:
    data = make_zip({kernel_name(1, 1): demo_kernel(1, 1)})
    a, b = create(data), create(data)
    assert a.pk == b.pk and (a.duplicate, b.duplicate) == (False, True)
    c = create(data, allow_duplicate=True)  # load_demo --force
    assert c.pk != a.pk and c.bundle_sha256 == a.bundle_sha256
    assert Kernel.objects.count() == 2 and Evaluation.objects.filter(is_current=True).count() == 2
