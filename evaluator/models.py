"""Evaluations of kernels, their per-distribution results, stored baselines and audit flags."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import models
from django.urls import reverse

from evaluator.harness.record import Record
from evaluator.verdict_label import VerdictLabel, verdict_label


class Evaluation(models.Model):
    """One run of the harness for one kernel on one hardware kind. The row is the truth about its progress."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"  # the harness produced a result record (which may say the kernel is wrong)
        FAILED = "failed", "Failed"  # infrastructure gave up after the allowed attempts; no verdict

    class ResultStatus(models.TextChoices):
        OK = "ok", "OK"
        COMPILE_ERROR = "compile_error", "Compile error"
        RUNTIME_ERROR = "runtime_error", "Runtime error"
        TIMEOUT = "timeout", "Timeout"
        REJECTED = "rejected", "Rejected"

    kernel = models.ForeignKey("catalogue.Kernel", on_delete=models.CASCADE, related_name="evaluations")
    hardware = models.CharField(max_length=50, db_index=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    is_current = models.BooleanField(default=True, help_text="The latest evaluation of its kernel on this hardware.")
    attempts = models.PositiveSmallIntegerField(default=0)
    queued_at = models.DateTimeField(auto_now_add=True)
    # Outbox marker: set once the evaluate_kernel message reached the broker; None while it has not (broker down
    # at upload, or requeued by the reaper and not yet sent). The reaper re-sends rows that stay unsent.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Refreshed every EVALUATOR_HEARTBEAT_INTERVAL seconds by the task while the harness runs; the reaper requeues a
    # RUNNING row whose heartbeat is older than EVALUATOR_HEARTBEAT_STALE (its worker died).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=255, blank=True)
    task_id = models.CharField(max_length=255, blank=True)

    # The full result record of docs/protocol.md section 8, plus the columns rankings sort and filter on.
    result = models.JSONField(null=True, blank=True)
    result_status = models.CharField(max_length=16, choices=ResultStatus.choices, blank=True, db_index=True)
    correct = models.BooleanField(null=True, db_index=True)
    standard_correct = models.BooleanField(null=True)
    reference_constant = models.BooleanField(null=True)
    speedup = models.FloatField(null=True, blank=True)
    speedup_ci_low = models.FloatField(null=True, blank=True)
    speedup_ci_high = models.FloatField(null=True, blank=True)
    speedup_fp32 = models.FloatField(null=True, blank=True)
    memory_ratio = models.FloatField(null=True, blank=True)
    candidate_ms = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Read from the record by the projection (evaluator/record_projection.py) so that queries filter and rank on
    # columns, never on JSON paths: timing the harness could not stand behind (`timing.unstable`; false when the
    # record predates the key), the roofline fraction (`speed_of_light.fraction`), and the software stack
    # (`environment`'s torch, CUDA, driver and device name; "" where the record has none).
    timing_unstable = models.BooleanField(default=False)
    speed_of_light_fraction = models.FloatField(null=True, blank=True)
    env_torch = models.CharField(max_length=200, blank=True)
    env_cuda = models.CharField(max_length=200, blank=True)
    env_driver = models.CharField(max_length=200, blank=True)
    env_device_name = models.CharField(max_length=200, blank=True)
    # What this evaluation cost, charged to its uploader's and LLM's compute budget (evaluator.selectors.budget):
    # the harness's own total (phases) less its wait for the GPU lock, else the attempt's wall time.
    harness_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-queued_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["kernel", "hardware"], condition=models.Q(is_current=True), name="evaluation_one_current"
            ),
            models.CheckConstraint(
                condition=models.Q(speedup__gt=0) | models.Q(speedup__isnull=True), name="evaluation_speedup_positive"
            ),
        ]
        indexes = [models.Index(fields=["hardware", "is_current", "correct"])]

    def __str__(self) -> str:
        return f"Evaluation {self.pk} of kernel {self.kernel_id} on {self.hardware} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("inspector:kernel-detail", args=[self.kernel_id])

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.DONE, self.Status.FAILED}

    def failed_distributions(self) -> list[str]:
        """The names of the record's distributions that failed (not skipped), the timed outputs' re-check included."""
        record = Record.from_stored(self.result)
        rows = [*record.distributions, *([record.timed_outputs] if record.timed_outputs else [])]
        return [d.name for d in rows if d.passed is False and not d.skipped]

    def verdict_label(self, failed: Iterable[str] | None = None) -> VerdictLabel:
        """The one-line verdict every page shows (evaluator.verdict_label), with the rankings' annotations where the
        query made them (`eligible`, `is_confirmed_hack`: evaluator.selectors.eligibility). `failed`: the failed
        distributions' names when the caller holds them (the inspector's rows), else the record's."""
        if failed is None:
            failed = () if self.correct else self.failed_distributions()
        return verdict_label(
            status=self.status,
            result_status=self.result_status,
            correct=self.correct,
            eligible=getattr(self, "eligible", True),
            confirmed_hack=getattr(self, "is_confirmed_hack", False),
            failed=failed,
        )


class DistributionResult(models.Model):
    """The correctness gate's verdict for one input distribution (D1-D4) of one evaluation."""

    class Name(models.TextChoices):
        D1 = "D1", "D1 (x1)"
        D2 = "D2", "D2 (x3)"
        D3 = "D3", "D3 (x0.01)"
        D4 = "D4", "D4 (x-1)"

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="distributions")
    name = models.CharField(max_length=4, choices=Name.choices)
    passed = models.BooleanField(null=True)
    skipped = models.BooleanField(default=False)
    skip_reason = models.CharField(max_length=500, blank=True)
    max_abs_error = models.FloatField(null=True, blank=True)
    max_rel_error = models.FloatField(null=True, blank=True)
    trials = models.PositiveSmallIntegerField(default=0)
    errors = models.TextField(blank=True)

    class Meta:
        ordering = ["evaluation", "name"]
        constraints = [models.UniqueConstraint(fields=["evaluation", "name"], name="distribution_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} of evaluation {self.evaluation_id}"


class SeedCommitment(models.Model):
    """The master seed an evaluation's secret seeds derived from (evaluator/harness/seeds.py). Kept here, never in
    the published record, whose `environment.seeds_digest` commits to it; revealed (`revealed_at`) once the
    evaluation is superseded or SEEDS_REVEAL_AFTER_DAYS old, so that anyone can re-run the verdict
    (`manage.py reproduce`). A digest is unique: a master seed serves one evaluation only.

    The site draws the master when the evaluation is queued and publishes its digest at once (`published_at`), so
    the seeds are fixed before the kernel runs; the finished record must commit to that digest. Rows without
    `published_at` predate that: the harness drew their master and the digest was published with the verdict."""

    evaluation = models.OneToOneField(Evaluation, on_delete=models.CASCADE, related_name="seed_commitment")
    master = models.CharField(max_length=64)
    digest = models.CharField(max_length=64, unique=True)
    scheme = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    revealed_at = models.DateTimeField(null=True, blank=True, db_index=True)
    published_at = models.DateTimeField(
        null=True, blank=True, help_text="When the digest was published, before the run (null: with the verdict)."
    )

    def __str__(self) -> str:
        return f"seeds of evaluation {self.evaluation_id} ({'revealed' if self.revealed_at else 'secret'})"


class ReEvaluation(models.Model):
    """Why an evaluation was queued by the site itself: a ranked kernel measured on a software or hardware stack
    that workers no longer run (evaluator.services.reruns.champions_rerun). One per kernel, hardware and stack, so a
    mixed fleet cannot queue the same kernel over and over."""

    evaluation = models.OneToOneField(Evaluation, on_delete=models.CASCADE, related_name="re_evaluation")
    previous = models.ForeignKey(Evaluation, null=True, on_delete=models.SET_NULL, related_name="+")
    kernel = models.ForeignKey("catalogue.Kernel", on_delete=models.CASCADE, related_name="re_evaluations")
    hardware = models.CharField(max_length=50)
    stack = models.CharField(max_length=300, help_text="The stack it was queued for (torch, CUDA, driver, GPU).")
    previous_stack = models.CharField(max_length=300, blank=True)
    estimated_seconds = models.FloatField(default=0, help_text="Charged to RERUN_GPU_SECONDS_PER_DAY.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["kernel", "hardware", "stack"], name="reevaluation_once_per_stack")
        ]

    def __str__(self) -> str:
        return f"re-evaluation of kernel {self.kernel_id} on {self.hardware} for {self.stack}"


class Webhook(models.Model):
    """An account's URL, called (POST, JSON) when one of its submissions finishes; the body is signed with
    HMAC-SHA256 under `secret` as Standard Webhooks sign it: webhook-id, webhook-timestamp, webhook-signature
    (evaluator.services.webhooks)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=64)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    last_status = models.CharField(max_length=300, blank=True)

    def __str__(self) -> str:
        return f"webhook of {self.user} -> {self.url}"


class Baseline(models.Model):
    """The reference Model's timing and peak memory for one problem, hardware, torch version and precision mode.

    An aggregate: the median over every finished evaluation's paired measurement (and an imported sweep, if any),
    with the smallest and largest of them and how many evaluations it holds (evaluator.services.baselines). Each
    evaluation also keeps its own paired baseline measurement in its result record.
    """

    class Precision(models.TextChoices):
        TF32 = "tf32", "PyTorch TF32"
        FP32 = "fp32", "PyTorch FP32"
        COMPILE = "compile", "torch.compile (TF32)"
        BF16 = "bf16", "PyTorch BF16"

    problem = models.ForeignKey("catalogue.Problem", on_delete=models.CASCADE, related_name="baselines")
    hardware = models.CharField(max_length=50)
    torch_version = models.CharField(max_length=64)
    precision = models.CharField(max_length=16, choices=Precision.choices)
    median_ms = models.FloatField()
    iqr_ms = models.FloatField(null=True, blank=True)
    mean_ms = models.FloatField(null=True, blank=True)
    calls = models.PositiveIntegerField(default=0)
    stats = models.JSONField(default=dict, blank=True)
    peak_memory_bytes = models.BigIntegerField(null=True, blank=True)
    evaluations = models.PositiveIntegerField(default=0, help_text="Evaluations whose paired timing is aggregated.")
    min_ms = models.FloatField(null=True, blank=True, help_text="Smallest aggregated median.")
    max_ms = models.FloatField(null=True, blank=True, help_text="Largest aggregated median.")
    measured_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["problem", "hardware", "precision"]
        constraints = [
            models.UniqueConstraint(
                fields=["problem", "hardware", "torch_version", "precision"], name="baseline_unique_setting"
            ),
            models.CheckConstraint(condition=models.Q(median_ms__gt=0), name="baseline_median_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.problem} {self.hardware} {self.precision}: {self.median_ms:.4g} ms"


class AuditFlag(models.Model):
    """A reward-hack finding about a kernel, from a static rule, a runtime signal or an LLM judge."""

    class Source(models.TextChoices):
        RULE = "rule", "Static rule"
        RUNTIME = "runtime", "Runtime signal"
        JUDGE = "judge", "LLM judge"
        IMPORT = "import", "Imported judge result"

    class Verdict(models.TextChoices):
        CLEAN = "clean", "Clean"
        INFO = "info", "Information"
        SUSPICIOUS = "suspicious", "Suspicious"
        HACK = "hack", "Hack"

    class Severity(models.TextChoices):
        INFO = "info", "Info"
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"

    class Review(models.TextChoices):
        SUSPECTED = "suspected", "Suspected"
        CORROBORATED = "corroborated", "Corroborated"  # a second judge or a runtime signal agrees
        CONFIRMED = "confirmed", "Confirmed hack"  # a person confirmed it: leaves the rankings
        DISMISSED = "dismissed", "Dismissed"
        LEGITIMATE = "legitimate", "Legitimate specialisation"

    kernel = models.ForeignKey("catalogue.Kernel", on_delete=models.CASCADE, related_name="audit_flags")
    source = models.CharField(max_length=16, choices=Source.choices)
    source_name = models.CharField(max_length=200, help_text="Rule id or judge name.")
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    severity = models.CharField(max_length=16, choices=Severity.choices, default=Severity.MEDIUM)
    classes = models.JSONField(default=list, blank=True, help_text="Catalogue ids, e.g. ['A6', 'B7'].")
    evidence = models.JSONField(default=list, blank=True, help_text="[{lines, quote, why}] with 1-based lines.")
    rationale = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    raw = models.JSONField(null=True, blank=True, help_text="The judge's full answer, for audit.")
    review_state = models.CharField(max_length=16, choices=Review.choices, default=Review.SUSPECTED, db_index=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="reviewed_flags"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(confidence__isnull=True) | models.Q(confidence__gte=0, confidence__lte=1),
                name="auditflag_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.source_name} on kernel {self.kernel_id} ({self.verdict}, {self.review_state})"


class ProfileRequest(models.Model):
    """A staff request for a profile of one evaluation: the kernel and its problem are evaluated again on
    a worker of the same hardware with torch.profiler traces of one call per side (evaluator.services.profiles)."""

    class Tool(models.TextChoices):
        TORCH = "torch", "torch.profiler (Chrome trace)"
        # Nsight Compute (ncu) is not wired yet: see README, "Profiles on request".

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        UNAVAILABLE = "unavailable", "Unavailable"  # the tool cannot run there (a CPU worker has no device trace)

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="profile_requests")
    tool = models.CharField(max_length=16, choices=Tool.choices, default=Tool.TORCH)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    artefacts = models.JSONField(default=list, blank=True, help_text="File names under VAR_DIR/profiles/<id>/.")
    detail = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"profile #{self.pk} of evaluation {self.evaluation_id} ({self.status})"


class ComputeBudget(models.Model):
    """Staff's per-account or per-LLM raise (or cut) of the compute budget (evaluator.selectors.budget). A blank
    limit means the default setting (BUDGET_KERNELS_PER_DAY, BUDGET_GPU_SECONDS_PER_DAY, BUDGET_QUEUED_MAX)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="compute_budget"
    )
    llm = models.OneToOneField(
        "catalogue.LLM", null=True, blank=True, on_delete=models.CASCADE, related_name="compute_budget"
    )
    kernels_per_day = models.PositiveIntegerField(null=True, blank=True, help_text="Kernels uploaded per 24 hours.")
    gpu_seconds_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="Harness seconds used per 24 hours."
    )
    queued_max = models.PositiveIntegerField(null=True, blank=True, help_text="Kernels queued or running at once.")
    note = models.CharField(max_length=500, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=False, llm__isnull=True)
                | models.Q(user__isnull=True, llm__isnull=False),
                name="computebudget_one_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"compute budget of {self.user or self.llm}"
