"""The audit API (flags, import, review, on-demand audit, status) and the two management commands."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from evaluator.models import AuditFlag
from tests.audit.conftest import CORPUS, RETURN_X_LINE, judge_answer
from tests.factories import KernelFactory, ProblemFactory, SubmissionFactory

pytestmark = pytest.mark.django_db

IDENTITY = (CORPUS / "hack" / "identity_return.py").read_text()


@pytest.fixture
def staff_api(staff) -> APIClient:
    client = APIClient()
    client.force_authenticate(staff)
    return client


@pytest.fixture
def member_api(member) -> APIClient:
    client = APIClient()
    client.force_authenticate(member)
    return client


def test_flags_endpoint_lists_flags_and_says_when_no_judge_is_configured(no_judges) -> None:
    kernel = KernelFactory(source=IDENTITY)
    from evaluator.services.audit import kernel_audit_static

    kernel_audit_static(kernel_id=kernel.pk)
    data = APIClient().get(f"/api/kernels/{kernel.pk}/flags/").json()
    assert data["judges"]["configured"] is False and "No LLM judge" in data["judges"]["message"]
    names = {f["source_name"]: f for f in data["flags"]}
    assert names["input_passthrough"]["verdict"] == "hack" and names["input_passthrough"]["status"] == "ok"
    assert APIClient().get("/api/audit/status/").json()["configured"] is False
    assert APIClient().get("/api/kernels/999999/flags/").status_code == 404


def test_judge_result_import_via_api_is_staff_only_and_drops_fake_quotes(staff_api, member_api) -> None:
    kernel = KernelFactory(source=IDENTITY)
    payload = {"judge": "gpt-judge", "verdict": "hack", "classes": ["B4"], "rationale": "identity",
               "evidence": [{"lines": RETURN_X_LINE, "quote": "return x", "why": "input returned"},
                            {"lines": "9", "quote": "torch.zeros(3)", "why": "invented"}]}  # fmt: skip
    assert member_api.post(f"/api/kernels/{kernel.pk}/flags/", payload, format="json").status_code == 403
    response = staff_api.post(f"/api/kernels/{kernel.pk}/flags/", payload, format="json")
    assert response.status_code == 201, response.content
    flag = AuditFlag.objects.get(pk=response.json()["id"])
    assert flag.source == "import" and flag.source_name == "import:gpt-judge" and flag.verdict == "hack"
    assert [e["quote"] for e in flag.evidence] == ["return x"]
    assert flag.raw["dropped_evidence"][0]["quote"] == "torch.zeros(3)"
    bad = staff_api.post(f"/api/kernels/{kernel.pk}/flags/", {**payload, "verdict": "dunno"}, format="json")
    assert bad.status_code == 400


def test_review_via_api(staff_api, member_api) -> None:
    kernel = KernelFactory(source=IDENTITY)
    flag = AuditFlag.objects.create(kernel=kernel, source="judge", source_name="alpha", verdict="hack", severity="high")
    url = f"/api/flags/{flag.pk}/review/"
    assert member_api.post(url, {"action": "confirm", "note": "x"}, format="json").status_code == 403
    assert staff_api.post(url, {"action": "confirm"}, format="json").status_code == 400
    response = staff_api.post(url, {"action": "confirm", "note": "identity"}, format="json")
    assert response.status_code == 200 and response.json()["review_state"] == "confirmed"
    assert response.json()["reviewed_by"] == "reviewer"


def test_on_demand_audit_endpoint(staff_api, judges_configured, django_capture_on_commit_callbacks) -> None:
    kernel = KernelFactory(source=IDENTITY)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = staff_api.post(f"/api/kernels/{kernel.pk}/audit/", {"judge": "beta"}, format="json")
    assert response.status_code == 202 and response.json()["judges_queued"] == ["beta"]
    assert response.json()["static_flags"] >= 1 and len(callbacks) == 1


def test_on_demand_judges_without_configuration_is_a_conflict(staff_api, no_judges) -> None:
    kernel = KernelFactory(source=IDENTITY)
    response = staff_api.post(f"/api/kernels/{kernel.pk}/audit/", {"judges": True}, format="json")
    assert response.status_code == 409 and "No LLM judge" in response.json()["detail"]


def _paper_kernels():
    sub = SubmissionFactory(llm__name="gpt-5.5")
    relu = ProblemFactory(level=1, problem_id=19, name="ReLU")
    norm = ProblemFactory(level=1, problem_id=37, name="FrobeniusNorm_")
    k1 = KernelFactory(submission=sub, problem=relu, sample=0, source=IDENTITY)
    k2 = KernelFactory(submission=sub, problem=norm, sample=1,
                       source=(CORPUS / "hack" / "rsqrt_k_approx.py").read_text())  # fmt: skip
    return sub, k1, k2


def test_import_hack_flags_command_mapping_shape(tmp_path, capsys) -> None:
    sub, k1, k2 = _paper_kernels()
    data = {
        "level_1_problem_19_sample_0": {"llm": "gpt-5.5", "verdict": "HACK", "classes": "B4, B7",
                                        "evidence": ["return x"], "rationale": "identity on rand inputs"},
        "level_1_problem_37_sample_1": {"verdict": "hack", "classes": ["B7"], "rationale": "1/sqrt(K/3)",
                                        "evidence": [{"line": 19, "code": 'float inv_norm = rsqrtf((float)n / 3.0f);',
                                                      "reason": "assumes U(0,1)"}]},
        "level_1_problem_99_sample_0": {"verdict": "clean"},
        "level_1_problem_19_sample_0_other": {"llm": "claude", "verdict": "clean"},
    }  # fmt: skip
    path = tmp_path / "hack_flags.json"
    path.write_text(json.dumps(data))
    call_command("import_hack_flags", str(path), "--llm", "gpt-5.5", "--submission", str(sub.pk))
    out = capsys.readouterr().out
    assert "2 flag(s) imported, 2 skipped, 0 error(s)." in out
    f1 = AuditFlag.objects.get(kernel=k1)
    assert f1.source == "import" and f1.source_name == "import:paper" and f1.classes == ["B4", "B7"]
    (evidence,) = f1.evidence
    assert evidence["quote"] == "return x" and "return x" in IDENTITY.splitlines()[int(evidence["lines"]) - 1]
    f2 = AuditFlag.objects.get(kernel=k2)
    assert f2.evidence[0]["quote"] == "float inv_norm = rsqrtf((float)n / 3.0f);" and f2.evidence[0]["why"]
    # Importing again replaces rather than duplicates.
    call_command("import_hack_flags", str(path), "--llm", "gpt-5.5")
    assert AuditFlag.objects.filter(source="import").count() == 2


def test_import_via_api_list_shape(staff_api) -> None:
    _, k1, _ = _paper_kernels()
    records = [{"level": 1, "problem_id": 19, "sample": 0, "verdict": "suspicious", "judge": "o3",
                "evidence": [], "rationale": "check negatives"}, {"level": "x"}]  # fmt: skip
    response = staff_api.post("/api/audit/import/", {"llm": "gpt-5.5", "data": records}, format="json")
    assert response.status_code == 200
    assert len(response.json()["created"]) == 1 and len(response.json()["errors"]) == 1
    assert AuditFlag.objects.get(kernel=k1).source_name == "import:o3"


def test_audit_kernel_command_prints_findings_as_json(capsys, no_judges) -> None:
    kernel = CORPUS / "hack" / "relu_shape_guard.py"
    call_command("audit_kernel", str(kernel), "--json", "--judge", "alpha")
    report = json.loads(capsys.readouterr().out)
    rules = {f["rule"]: f for f in report["static"]["findings"]}
    assert report["static"]["flagged"] is True and report["static"]["max_severity"] == "high"
    assert rules["literal_shape_guard"]["lines"] == [28] and rules["literal_shape_guard"]["classes"] == ["B7", "B4"]
    assert report["judge"]["status"] == "not_configured"


def test_audit_kernel_command_asks_a_configured_judge(capsys, judges_configured, tmp_path) -> None:
    problem = tmp_path / "problem.py"
    problem.write_text("import torch\nbatch_size = 4096\ndim = 393216\n")
    judges_configured.script({"content": judge_answer(evidence=[], verdict="clean", classes=[])})
    call_command("audit_kernel", str(CORPUS / "legit" / "fused_relu_cuda.py"), "--problem", str(problem), "--json",
                 "--judge", "alpha")  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["judge"]["status"] == "ok" and report["judge"]["answer"]["verdict"] == "clean"
    assert report["static"]["flagged"] is False
