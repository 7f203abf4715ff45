"""Reads for the staff audit queue (/audit/): filtered, paginated flags, kernels that count in rankings first."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Case, Exists, OuterRef, QuerySet, Value, When

from evaluator.audit.prompt import CATALOGUE
from evaluator.models import AuditFlag
from evaluator.selectors.eligibility import ranked_evaluations

QUEUE_STATES = [AuditFlag.Review.SUSPECTED, AuditFlag.Review.CORROBORATED]
QUEUE_VERDICTS = [AuditFlag.Verdict.SUSPICIOUS, AuditFlag.Verdict.HACK]
FLAGS_PER_PAGE = 50
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


def catalogue_legend() -> list[tuple[str, str]]:
    """(class id, meaning) of the reward-hack catalogue the rules and judges label flags with (A1 ... D4)."""
    legend: list[tuple[str, str]] = []
    for line in CATALOGUE.splitlines():
        head, _, rest = line.partition(" ")
        if head[:1].isalpha() and head[1:].isdigit():
            legend.append((head, rest))
        elif legend:  # a wrapped line continues the previous class
            legend[-1] = (legend[-1][0], f"{legend[-1][1]} {line.strip()}")
    return legend


@dataclass
class QueueFilters:
    state: str = "open"  # "open" (suspected or corroborated) or one AuditFlag.Review value, or "all"
    verdict: str = ""  # "" = suspicious or hack; "all"; or one verdict
    source: str = ""
    severity: str = ""
    cls: str = ""  # one catalogue class id
    q: str = ""  # LLM name contains


def review_queue(*, filters: QueueFilters, page: int | str = 1) -> Page:
    """Flags matching the filters: those on kernels that count in a ranking now first, then corroborated before
    suspected, most severe, newest. Each flag carries `ranked` (its kernel counts in a ranking)."""
    flags: QuerySet[AuditFlag] = AuditFlag.objects.select_related("kernel__problem", "kernel__llm")
    if filters.state == "open":
        flags = flags.filter(review_state__in=QUEUE_STATES)
    elif filters.state in AuditFlag.Review.values:
        flags = flags.filter(review_state=filters.state)
    if filters.verdict == "":
        flags = flags.filter(verdict__in=QUEUE_VERDICTS)
    elif filters.verdict in AuditFlag.Verdict.values:
        flags = flags.filter(verdict=filters.verdict)
    if filters.source in AuditFlag.Source.values:
        flags = flags.filter(source=filters.source)
    if filters.severity in AuditFlag.Severity.values:
        flags = flags.filter(severity=filters.severity)
    if filters.cls:
        # JSON containment is not portable to SQLite: match the (short) class lists here.
        matching = [pk for pk, classes in flags.values_list("pk", "classes") if filters.cls in (classes or [])]
        flags = flags.filter(pk__in=matching)
    if filters.q:
        flags = flags.filter(kernel__llm__name__icontains=filters.q)
    severity = Case(*(When(severity=k, then=Value(v)) for k, v in SEVERITY_ORDER.items()), default=Value(9))
    flags = flags.annotate(
        ranked=Exists(ranked_evaluations().filter(kernel_id=OuterRef("kernel_id"))), severity_rank=severity
    ).order_by("-ranked", "review_state", "severity_rank", "-created_at")  # corroborated sorts before suspected
    return Paginator(flags, FLAGS_PER_PAGE).get_page(page)
