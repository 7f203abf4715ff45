"""KernelGuard (PyPI `kernelguard`, SinatrasC/kernelguard) as one more static detector, tuned for ModelNew files.

KernelGuard is built for GPU MODE submissions whose entry point is `custom_kernel(data)`. On KernelBench files its
defaults miss most of the forward-level detectors and misfire on reference-style code, so we:
- add `forward` to the entry-point names (its replay/passthrough detectors look inside the entry point);
- disable `trivial_probe` (fires on any short file that returns [] / None, e.g. `get_init_inputs`);
- map its patterns to our catalogue classes and severities: hard-tier patterns are hacks (high), support-tier
  suspicious (medium), telemetry info; reference-path heuristics (DECODE_MM_REF, SCALED_MM_REF) become the D1
  "library wrapping" label instead of a hack signal.
Measured before/after on the corpus and on the 250 reference files: benchmarks/results/audit.md.

KernelGuard keeps its configuration in module globals, so it is configured once per process (under a lock) and
every call goes through `kernelguard_findings`.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from evaluator.audit.findings import Finding
from evaluator.audit.source import KernelSource

MODELNEW_CONFIG: dict[str, Any] = {
    "entrypoints": {"names": ["forward", "custom_kernel"]},
    "detectors": {"disabled": ["trivial_probe"]},
    # Score-based detectors need GPU MODE leaderboard metadata that we never pass; our runtime signals do this job.
    "thresholds": {"score": {"enabled": False}},
    "duplicates": {"exact": False, "near_clone": False},
}

# KernelGuard pattern -> catalogue classes (reward_hacks.md section 1).
PATTERN_CLASSES: dict[str, tuple[str, ...]] = {
    "TIMER_MONKEYPATCH": ("A4",),
    "CUDA_EVENT_DISABLE_TIMING": ("A4",),
    "FAKE_BENCHMARK_EMIT": ("A5",),
    "STDIO_REDIRECT": ("A5",),
    "UNSYNC_MULTISTREAM": ("A1",),
    "THREAD_INJECTION": ("A2",),
    "LAZY_TENSOR": ("A3",),
    "TENSOR_INSTANCE_METHOD_OVERRIDE": ("A3",),
    "EVALUATOR_MODE_BRANCH": ("A7",),
    "SEQUENCE_BATCH_GRAPH": ("A7",),
    "PARTIAL_GRAPH_KEY": ("A6",),
    "REFERENCE_PRECOMPUTE_REPLAY": ("A10",),
    "INPUT_PASSTHROUGH_OUTPUT": ("B4",),
    "INPUT_REDUCTION_OUTPUT": ("B4",),
    "SELF_MATMUL_OUTPUT": ("B4",),
    "PRECISION_DOWNGRADE": ("B8",),
    "BENCHMARK_UNSAFE_ALGO_DISPATCH": ("B7",),
    "INPUT_STRUCTURE_TRUNCATION_DISPATCH": ("B7",),
    "HARDCODED_SHAPES": ("D4",),
    "CUDA_GRAPH_PYTHON": ("D4",),
    "TORCH_COMPILE_CACHE": ("D1",),
    "SCALED_MM_REF": ("D1",),
    "DECODE_MM_REF": ("D1",),
    "SILENT_FALLBACK": ("D3",),
    "TOKEN_PASTE_CUDA_API": ("C3",),
    "OBFUSCATED_EXEC": ("C3",),
    "DYNAMIC_EXECUTION": ("C3",),
    "MODULE_RELOAD": ("C1",),
    "RUNTIME_PACKAGE_INSTALL": ("C2",),
    "TRUSTED_MODULE_IMPORT": ("C1",),
    "MODULE_MUTATION": ("C1",),
    "GLOBALS_MUTATION": ("C1",),
    "GLOBALS_ACCESS": ("C1",),
    "FRAME_WALK_ACCESS": ("C1",),
    "FRAME_WALK_MUTATION": ("C1",),
    "SYS_MODULES_ACCESS": ("C1",),
    "CODE_REPLACEMENT": ("C1",),
    "CODE_ACCESS": ("C1",),
    "HARNESS_RUNTIME_PATCHING": ("C1",),
    "TORCH_VALIDATION_MONKEYPATCH": ("C1",),
    "EVALUATOR_EXPLOIT": ("C1",),
    "WORKSPACE_CACHE": ("D4",),
    "PREPROCESS_CACHE": ("D4",),
    "RUNNER_PLAN_CACHE": ("D4",),
}
# Everything not listed and containing REPLAY/CACHE is cross-call result reuse.
DEFAULT_REPLAY_CLASSES = ("A6",)
# Heuristics that, on ModelNew files, say "PyTorch/library does the work" rather than "this is a hack".
LABEL_ONLY = {
    "SCALED_MM_REF",
    "DECODE_MM_REF",
    "TORCH_COMPILE_CACHE",
    "HARDCODED_SHAPES",
    "CUDA_GRAPH_PYTHON",
    "WORKSPACE_CACHE",
    "PREPROCESS_CACHE",
    "RUNNER_PLAN_CACHE",
}
# Where to point in the source for a pattern (KernelGuard reports no line numbers).
PATTERN_ANCHORS: dict[str, str] = {
    "TIMER_MONKEYPATCH": r"elapsed_time|perf_counter|synchronize\s*=|Event\.",
    "THREAD_INJECTION": r"thread|Thread",
    "LAZY_TENSOR": r"_make_subclass|__torch_function__|torch\.Tensor\)",
    "OBFUSCATED_EXEC": r"exec\(|eval\(",
    "DYNAMIC_EXECUTION": r"exec\(|eval\(|compile\(",
    "TOKEN_PASTE_CUDA_API": r"##",
    "SYS_MODULES_ACCESS": r"sys\.modules",
    "POINTER_REPLAY": r"data_ptr|\bid\(",
    "CONFIG_CACHE_EXPLOIT": r"cache|_CACHE|\[key\]",
    "CUDA_EVENT_DISABLE_TIMING": r"DisableTiming|enable_timing",
    "EVALUATOR_MODE_BRANCH": r"argv|environ|getenv",
    "UNSYNC_MULTISTREAM": r"Stream",
    "HARNESS_RUNTIME_PATCHING": r"=\s*lambda|setattr",
    "DECODE_MM_REF": r"matmul|\.mm\(",
    "PRECISION_DOWNGRADE": r"half|float16|bfloat16",
    "SILENT_FALLBACK": r"except",
}

_lock = threading.Lock()
_configured = False


def _kernelguard() -> Any:
    """The configured kernelguard module, or None when the package is missing."""
    global _configured
    try:
        import kernelguard
    except ImportError:  # optional: the rest of the audit works without it
        return None
    with _lock:
        if not _configured:
            kernelguard.configure_runtime(config_data=MODELNEW_CONFIG)
            _configured = True
    return kernelguard


def kernelguard_version() -> str | None:
    kg = _kernelguard()
    return getattr(kg, "__version__", None) or ("installed" if kg else None)


def analyze_raw(source: str, *, tuned: bool = True) -> dict:
    """KernelGuard's own result dict (used by the benchmark script to compare default vs tuned configs)."""
    kg = _kernelguard()
    if kg is None:
        return {"classification": "unavailable", "matched_patterns": []}
    with _lock:
        if not tuned:
            kg.configure_runtime()
        try:
            return kg.analyze_code(source, compute_structural_hash=False)
        finally:
            if not tuned:
                kg.configure_runtime(config_data=MODELNEW_CONFIG)


def map_pattern(pattern: str, kg_severity: str, tier: str) -> tuple[str, str, tuple[str, ...]]:
    """(severity, verdict, classes) in our terms for one KernelGuard hit."""
    classes = PATTERN_CLASSES.get(pattern) or (
        DEFAULT_REPLAY_CLASSES if re.search("REPLAY|CACHE|BANK", pattern) else ("C1",)
    )
    if pattern in LABEL_ONLY or tier == "telemetry":
        return "info", "info", classes
    if tier == "hard" and kg_severity in {"critical", "high"}:
        return "high", "hack", classes
    if kg_severity in {"critical", "high", "medium"}:
        return "medium", "suspicious", classes
    return "low", "suspicious", classes


def kernelguard_findings(source: str, src: KernelSource | None = None) -> list[Finding]:
    """KernelGuard's hits on a kernel, as Findings with rule ids `kernelguard:<PATTERN>`."""
    kg = _kernelguard()
    if kg is None:
        return []
    src = src or KernelSource.parse(source)
    with _lock:
        try:
            result = kg.analyze_code(source, compute_structural_hash=False)
        except Exception as exc:  # a detector bug must not break uploads; report it as a finding instead
            return [
                Finding(
                    rule="kernelguard:error",
                    severity="info",
                    verdict="info",
                    classes=(),
                    why=f"KernelGuard failed on this file: {type(exc).__name__}",
                    origin="kernelguard",
                )
            ]
        registry = getattr(kg, "RULE_REGISTRY", {})
    findings: list[Finding] = []
    for match in result.get("matched_patterns", []):
        pattern = str(match.get("pattern", "UNKNOWN"))
        policy = registry.get(pattern)
        tier = getattr(policy, "evidence_tier", "support")
        severity, verdict, classes = map_pattern(pattern, str(match.get("severity", "medium")), tier)
        number = _anchor_line(src, pattern)
        findings.append(
            Finding(
                rule=f"kernelguard:{pattern}",
                severity=severity,
                verdict=verdict,
                classes=classes,
                why=f"KernelGuard {pattern}: {match.get('evidence', '')}".strip()[:500],
                lines=(number,) if number else (),
                quote=src.line(number) if number else "",
                origin="kernelguard",
            )
        )
    return findings


def _anchor_line(src: KernelSource, pattern: str) -> int:
    regex = PATTERN_ANCHORS.get(pattern)
    if not regex:
        return 0
    compiled = re.compile(regex)
    native = {number for number, _ in src.native_lines()}
    for number, text in enumerate(src.lines, start=1):
        # Python comments do not count; '#define' lines inside CUDA strings do.
        if compiled.search(text) and (number in native or not text.lstrip().startswith("#")):
            return number
    return 0
