"""What a CPU's timing can and cannot show. On a shared CPU, timings move with whatever else runs (other processes,
page faults on fresh inputs): the timing checks that compare clocks (evaluator.audit.runtime_signals'
CPU_NOISY_SIGNALS) can fail on a correct kernel there and pass again on a quiet machine. The pages show their
figures but do not accuse on them: a failure reads "noisy on a CPU", and a runtime flag raised from one reads as
"not evidence" rather than as an open suspicion. On a GPU the same checks decide. The harness and the audit rules
are unchanged; this is how their findings are shown."""

from __future__ import annotations

from typing import Any

from evaluator.audit.runtime_signals import CHECK_SIGNALS, CPU_NOISY_RULES, CPU_NOISY_SIGNALS
from evaluator.hardware import is_cpu
from evaluator.harness.record import Record
from evaluator.models import AuditFlag

# Check names (record.checks) and runtime flag names (AuditFlag.source_name) of the clock-comparing checks.
NOISY_CHECKS = frozenset(name for name, signal in CHECK_SIGNALS.items() if signal[0] in CPU_NOISY_SIGNALS)
NOISY_RULES = CPU_NOISY_RULES


def cpu_timed(record: Record, hardware: str | None) -> bool:
    """The evaluation was timed on a CPU (its hardware label, or the record's own clock)."""
    return is_cpu(hardware) or record.timing.device_kind == "cpu"


def cpu_noise_flag(flag: AuditFlag) -> bool:
    """A runtime flag raised by a clock-comparing check of an evaluation on a CPU (its raw names the hardware)."""
    raw: Any = flag.raw if isinstance(flag.raw, dict) else {}
    return (
        flag.source == AuditFlag.Source.RUNTIME
        and flag.source_name in NOISY_RULES
        and is_cpu(raw.get("hardware"))
        and flag.review_state != AuditFlag.Review.CONFIRMED
    )
