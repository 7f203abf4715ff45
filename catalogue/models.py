"""The catalogue: LLMs, KernelBench problems, uploaded bundles (submissions) and their kernels."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class LLM(models.Model):
    """A language model whose kernels are evaluated. (Never called "Model": that name belongs to KernelBench.)"""

    name = models.CharField(max_length=200, unique=True)
    # The forms look-alike names share (catalogue.names.name_skeletons: the UTS #39 skeleton of the name as written,
    # in capitals and in small letters): a new name sharing one with an LLM is refused, naming that LLM.
    name_skeleton = models.CharField(max_length=200, blank=True, db_index=True)
    name_skeleton_upper = models.CharField(max_length=200, blank=True, db_index=True)
    name_skeleton_lower = models.CharField(max_length=200, blank=True, db_index=True)
    organisation = models.CharField(max_length=200, blank=True)
    notes = models.TextField(blank=True)
    # Who may upload under this LLM (selectors/llms.py: llm_can_upload): the owner, members of the owner group,
    # and staff. The first upload makes its uploader the owner; an LLM with neither (demo, imported) is staff-only.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="llms"
    )
    owner_group = models.ForeignKey("auth.Group", null=True, blank=True, on_delete=models.SET_NULL, related_name="llms")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM"
        verbose_name_plural = "LLMs"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:llm-detail", args=[self.pk])


class Problem(models.Model):
    """One exact KernelBench problem source.

    A problem is identified by (problem_set, level, problem_id) *and* its sha256: when a re-import brings a changed
    source, a new row is created and becomes the latest; older results keep pointing at the source they ran against.
    """

    class Degenerate(models.TextChoices):
        """Whether the reference output is constant for every input (docs/protocol.md section 1). SUSPECTED and
        CONFIRMED leave the rankings (evaluator.selectors.eligibility); CLEARED stays cleared unless new evidence."""

        NO = "", "Not degenerate"
        SUSPECTED = "suspected", "Degenerate (found from evaluations)"
        CONFIRMED = "confirmed", "Degenerate (confirmed)"
        CLEARED = "cleared", "Cleared by staff"

    problem_set = models.CharField(max_length=100, help_text="Problem-set version label, e.g. kernelbench-main.")
    level = models.PositiveSmallIntegerField()
    problem_id = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    filename = models.CharField(max_length=255, blank=True)
    source = models.TextField()
    sha256 = models.CharField(max_length=64, db_index=True)
    origin = models.CharField(max_length=500, blank=True, help_text="Where the source came from (upstream path).")
    core = models.BooleanField(default=True, help_text="Part of the 250-problem benchmark (levels 1-3).")
    active = models.BooleanField(default=True, help_text="Counted in rankings; false for degenerate problems.")
    inactive_reason = models.CharField(max_length=500, blank=True)
    degenerate = models.CharField(max_length=16, choices=Degenerate.choices, default=Degenerate.NO, blank=True)
    # {reason, source, evaluation_ids, count, varying, first_at, last_at, note}: evaluator.services.degenerate
    degenerate_evidence = models.JSONField(default=dict, blank=True)
    degenerate_reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    degenerate_reviewed_at = models.DateTimeField(null=True, blank=True)
    is_latest = models.BooleanField(default=True, help_text="The newest source for this id in its problem set.")
    is_demo = models.BooleanField(default=False, help_text="Part of the project's own CPU-sized demo set.")
    # The work one forward must do at the benchmark shapes (evaluator/harness/workers/flops.py): null until
    # counted (`manage.py count_flops`, or from the first evaluation's record).
    flops = models.BigIntegerField(null=True, blank=True, help_text="FLOPs of one forward (matrix + vector).")
    bytes_moved = models.BigIntegerField(
        null=True, blank=True, help_text="Bytes one forward must move: inputs, output and parameters, once each."
    )
    work_counts = models.JSONField(default=dict, blank=True, help_text="The count's parts (matrix, vector, dtype).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["problem_set", "level", "problem_id", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["problem_set", "level", "problem_id", "sha256"], name="problem_unique_source"
            ),
            models.UniqueConstraint(
                fields=["problem_set", "level", "problem_id"],
                condition=models.Q(is_latest=True),
                name="problem_one_latest",
            ),
            models.CheckConstraint(condition=models.Q(level__gte=1), name="problem_level_positive"),
            models.CheckConstraint(
                condition=models.Q(active=True) | ~models.Q(inactive_reason=""), name="problem_inactive_has_reason"
            ),
        ]
        indexes = [models.Index(fields=["level", "problem_id"])]

    def __str__(self) -> str:
        return f"L{self.level}/{self.problem_id} {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:problem-detail", args=[self.pk])

    @property
    def key(self) -> str:
        return f"L{self.level}/{self.problem_id}"

    @property
    def is_degenerate(self) -> bool:
        return self.degenerate in (self.Degenerate.SUSPECTED, self.Degenerate.CONFIRMED)


class Submission(models.Model):
    """One uploaded kernel bundle from one LLM, evaluated on one hardware kind."""

    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    llm = models.ForeignKey(LLM, on_delete=models.PROTECT, related_name="submissions")
    uploader = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="submissions"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED, db_index=True)
    problem_set = models.CharField(max_length=100)
    hardware = models.CharField(max_length=50)
    bundle_name = models.CharField(max_length=255, blank=True)
    bundle_format = models.CharField(max_length=32, blank=True)
    bundle_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    notes = models.TextField(blank=True)
    report = models.JSONField(default=list, blank=True, help_text="Per-file parse report: accepted and skipped.")
    claimed_results = models.JSONField(
        null=True, blank=True, help_text="The submitter's own eval_results.json, kept only as a claim."
    )
    kernel_count = models.PositiveIntegerField(default=0)
    evaluated_count = models.PositiveIntegerField(default=0)
    correct_count = models.PositiveIntegerField(default=0)

    # Not columns: set by leaderboard.services.submissions.submission_create on the instance it returns.
    duplicate: bool  # the same kernels were uploaded before: this is that earlier submission, nothing stored
    evaluation_pending: bool  # the broker was unreachable: the reaper sends the evaluation messages later

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(evaluated_count__lte=models.F("kernel_count")), name="submission_counts_bounded"
            ),
            models.CheckConstraint(
                condition=models.Q(correct_count__lte=models.F("evaluated_count")), name="submission_correct_bounded"
            ),
        ]

    def __str__(self) -> str:
        return f"Submission {self.pk} ({self.llm})"

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:submission-detail", args=[self.pk])


class Kernel(models.Model):
    """One candidate kernel file (a ModelNew) for one problem, one sample of a submission."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="kernels")
    llm = models.ForeignKey(LLM, on_delete=models.PROTECT, related_name="kernels")  # denormalised for rankings
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="kernels")
    sample = models.PositiveIntegerField(default=0)
    source = models.TextField()
    sha256 = models.CharField(max_length=64, db_index=True)
    # The source with comments, docstrings and formatting normalised away (catalogue.fingerprints): trivial
    # variants share it, so the duplicate check and the board count them as one kernel.
    fingerprint = models.CharField(max_length=64, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["problem__level", "problem__problem_id", "sample"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "problem", "sample"], name="kernel_unique_sample"),
        ]

    def __str__(self) -> str:
        return f"{self.llm} {self.problem.key} sample {self.sample}"

    def get_absolute_url(self) -> str:
        return reverse("inspector:kernel-detail", args=[self.pk])


class ApiToken(models.Model):
    """A user's API token, stored as the SHA-256 of its key: the key itself is shown once, when it is made, so a
    copy of the database hands out no working token. `prefix` (the key's first characters) only helps recognise it.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token")
    prefix = models.CharField(max_length=8)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"
