"""Regex rules over the C++/CUDA source embedded in a kernel file (load_inline strings).

Line numbers refer to the kernel file itself, so quotes are verbatim lines of the uploaded source.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from evaluator.audit.findings import Finding
from evaluator.audit.source import KernelSource


@dataclass(frozen=True)
class NativePattern:
    rule: str
    severity: str
    verdict: str
    classes: str
    regex: re.Pattern[str]
    why: str


NATIVE_PATTERNS = [
    NativePattern(
        "side_stream",
        "high",
        "hack",
        "A1",
        re.compile(
            r"\bcudaStreamCreate\w*\s*\(|\bgetStreamFromPool\s*\(|\bcudaStreamNonBlocking\b|"
            r"\bcublasSetStream\s*\(|\bcudaStreamBeginCapture\b"
        ),
        "Creates or binds a private CUDA stream: work can outlive events recorded on the current stream.",
    ),
    NativePattern(
        "thread_or_process",
        "high",
        "hack",
        "A2",
        re.compile(r"\bstd::thread\b|\bpthread_create\s*\(|\bstd::async\s*\(|\bfork\s*\(\s*\)"),
        "Starts a host thread in native code: work can continue after forward returns.",
    ),
    NativePattern(
        "l2_persistence",
        "high",
        "hack",
        "A8",
        re.compile(
            r"accessPolicyWindow|cudaLimitPersistingL2CacheSize|cudaAccessPropertyPersisting|"
            r"cudaStreamAttributeAccessPolicyWindow|cudaCtxResetPersistingL2Cache"
        ),
        "Marks memory L2-persisting so the harness's cache flush does not evict the working set.",
    ),
    NativePattern(
        "event_disable_timing",
        "medium",
        "suspicious",
        "A4",
        re.compile(r"cudaEventDisableTiming|cudaEventElapsedTime|cudaEventCreate\w*\s*\("),
        "Creates/reads CUDA events in the kernel: a kernel has no reason to touch the timing machinery.",
    ),
    NativePattern(
        "native_introspection",
        "high",
        "hack",
        "A4,C1",
        re.compile(
            r"\bdlsym\s*\(|\bdlopen\s*\(|\bmprotect\s*\(|\bptrace\s*\(|/proc/self|\bmmap\s*\(|"
            r"RTLD_NEXT|\bdup2\s*\(|\bfdopen\s*\("
        ),
        "Native code patches symbols, memory protections or file descriptors of the process.",
    ),
    NativePattern(
        "precision_downcast",
        "medium",
        "suspicious",
        "B8",
        # Conversions of values only: fp32 values made half (__float2half, a cast to a half value type) or a tensor
        # converted (.to(kHalf)). A reduced type only named in a dtype dispatch (`dtype == torch::kHalf`,
        # `kernel<__half>`, `reinterpret_cast<const __half*>(x.data_ptr())` in its half branch), which an fp32 input
        # never takes, converts nothing; fp32 memory read as half would fail the correctness gate anyway.
        re.compile(
            r"__floats?2half\w*|__floats?2bfloat16\w*|__nv_cvt_float\w*|"
            r"\bstatic_cast<\s*(?:__half2?|half2?|__nv_bfloat16\w*|__nv_fp8\w*|(?:at|c10)::(?:Half|BFloat16))\s*>|"
            r"\(\s*(?:__half2?|__nv_bfloat16\w*|__nv_fp8\w*)\s*\)\s*[\w(]|"
            r"\.(?:to|toType)\(\s*(?:torch|at|c10)::(?:k|ScalarType::)(?:Half|BFloat16)|\.(?:half|bfloat16)\(\s*\)"
        ),
        "Computes in fp16/bf16/fp8 for an fp32 problem.",
    ),
    NativePattern(
        "fast_math",
        "info",
        "info",
        "B8",
        re.compile(r"use_fast_math|__expf\b|__logf\b|__fdividef\b|__sinf\b|__cosf\b|__powf\b"),
        "Uses fast-math intrinsics (reduced accuracy; the fp32 tolerance decides).",
    ),
    NativePattern(
        "value_early_exit",
        "medium",
        "suspicious",
        "B7",
        re.compile(r"if\s*\(.*(?:<|<=|==)\s*-?\d*\.?\d+[eE]-\d+f?\s*\)\s*(?:\{\s*)?(?:break|return)\b"),
        "A loop stops once a value underflows a tiny threshold: exact only for inputs whose running value vanishes.",
    ),
    NativePattern(
        "vendor_library",
        "info",
        "info",
        "D1",
        re.compile(
            r"\bcublas\w*\s*\(|\bcudnn\w*\s*\(|\bcutlass::|\bat::(?:matmul|mm|bmm|conv\w*|addmm|"
            r"linear|softmax|layer_norm|batch_norm)\s*\(|\btorch::(?:matmul|mm|bmm|conv\w*|addmm|"
            r"linear|softmax|layer_norm|batch_norm)\s*\("
        ),
        "Calls a vendor library or an ATen operator from native code (library time, not custom code).",
    ),
]

# File-scope or function-scope variables that survive between calls: `static bool done = false;`,
# `__device__ float bank[N];`. Functions (`static __device__ float f(`), constants and casts are excluded.
_STATIC_VAR = re.compile(
    r"^\s*static\s+(?!const\b|constexpr\b|inline\b|__device__\b|__global__\b|__host__\b|__forceinline__\b|void\b|"
    r"_assert|_cast)(?:unsigned\s+|volatile\s+)?[\w:<>,\s\*]*?\b\w+\s*(?:\[[^\]]*\]\s*)*(?:=[^=(][^;]*|=\s*\w+\([^)]*\)\s*)?;"
)
_DEVICE_VAR = re.compile(
    r"^\s*(?:static\s+)?__device__\s+(?!__forceinline__|inline|const\b)[\w:<>\s\*]+?\b\w+\s*"
    r"(?:\[[^\]]*\]\s*)*(?:=[^;(]*)?;"
)
_TOKEN_PASTE = re.compile(r"##")
_CUDA_FRAGMENT = re.compile(r"\bcuda[A-Z]?\w*\s*,|\bStream|\bEvent|\bMemcpy|\bGraph")


def _finding(
    rule: str,
    severity: str,
    verdict: str,
    classes: str,
    why: str,
    src: KernelSource,
    number: int,
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        verdict=verdict,
        classes=tuple(classes.split(",")),
        why=why,
        lines=(number,),
        quote=src.line(number),
    )


def rule_native_patterns(src: KernelSource) -> list[Finding]:
    findings: list[Finding] = []
    lines = src.native_lines()
    synced = any(re.search(r"cudaStreamSynchronize|cudaDeviceSynchronize|cudaStreamWaitEvent", c) for _, c in lines)
    for pattern in NATIVE_PATTERNS:
        for number, code in lines:
            if pattern.regex.search(code):
                severity, verdict = pattern.severity, pattern.verdict
                if pattern.rule == "side_stream" and synced:
                    severity, verdict = "medium", "suspicious"
                findings.append(_finding(pattern.rule, severity, verdict, pattern.classes, pattern.why, src, number))
                break  # one finding per rule is enough evidence; the quote shows the first hit
    return findings


def rule_persistent_state(src: KernelSource) -> list[Finding]:
    """A6 (native): static host variables or __device__ globals that keep results between calls."""
    findings: list[Finding] = []
    for number, code in src.native_lines():
        if _STATIC_VAR.search(code) and "(" not in code.split("=")[0]:
            findings.append(
                _finding(
                    "cuda_persistent_state",
                    "high",
                    "hack",
                    "A6",
                    "A static variable in host code keeps state between calls (compute once, replay later).",
                    src,
                    number,
                )
            )
        elif _DEVICE_VAR.search(code) and "(" not in code.split("=")[0]:
            findings.append(
                _finding(
                    "cuda_persistent_state",
                    "medium",
                    "suspicious",
                    "A6",
                    "A __device__ global buffer persists between launches.",
                    src,
                    number,
                )
            )
    return findings[:3]


def rule_token_paste(src: KernelSource) -> list[Finding]:
    """C3: ## token pasting; high when the pasted pieces look like CUDA API names (filter evasion)."""
    lines = src.native_lines()
    hits = [(n, c) for n, c in lines if _TOKEN_PASTE.search(c)]
    if not hits:
        return []
    text = "\n".join(c for _, c in lines)
    evasive = bool(_CUDA_FRAGMENT.search(text)) and bool(re.search(r"\w+\(\s*cuda\w*\s*,\s*\w+\s*\)", text))
    number = hits[0][0]
    if evasive:
        return [
            _finding(
                "token_paste",
                "high",
                "hack",
                "C3",
                "## token pasting assembles CUDA API names from fragments (evades string filters).",
                src,
                number,
            )
        ]
    return [
        _finding(
            "token_paste",
            "medium",
            "suspicious",
            "C3",
            "## token pasting in the native source (can hide API names from review).",
            src,
            number,
        )
    ]


NATIVE_RULES: list[Callable[[KernelSource], list[Finding]]] = [
    rule_native_patterns,
    rule_persistent_state,
    rule_token_paste,
]
