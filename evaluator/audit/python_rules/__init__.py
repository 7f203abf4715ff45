"""AST rules over the Python side of a KernelBench `ModelNew` file (reward_hacks.md section 4, "own AST rules")."""

# Each rule is a function `(src, facts) -> list[Finding]`. Rules aim at what makes a KernelBench kernel look faster or
# more correct than it is; legitimate specialisation (fixed channel counts, tiles, pre-transposed weights) is reported
# as severity "info" with verdict "info" (catalogue D4), never as a hack. The rules live in one module per family;
# PYTHON_RULES fixes the order in which they run (and so the order of findings).

from __future__ import annotations

from evaluator.audit.python_rules.caches import (
    CONTAINER_FACTORIES,
    CONTAINER_WRITES,
    rule_forward_caches,
    rule_pointer_keys,
)
from evaluator.audit.python_rules.common import Rule
from evaluator.audit.python_rules.concurrency import (
    STREAM_CALLS,
    SYNC_CALLS,
    rule_python_streams_threads,
    rule_tensor_subclass,
)
from evaluator.audit.python_rules.fallbacks import (
    DECODE_CALLS,
    DOWNCAST_DTYPES,
    DOWNCAST_METHODS,
    DYNAMIC_CALLS,
    NORM_LAYERS,
    rule_dynamic_code,
    rule_norm_affine_dropped,
    rule_precision,
    rule_subclass_reference,
    rule_try_fallback,
)
from evaluator.audit.python_rules.kernel_presence import (
    HEAVY_TORCH_OPS,
    NN_LAYER_PREFIXES,
    rule_decoy_kernel,
    rule_no_custom_kernel,
    rule_torch_compute,
)
from evaluator.audit.python_rules.outputs import rule_input_mutation, rule_returned_values
from evaluator.audit.python_rules.shape_guards import rule_literal_guards
from evaluator.audit.python_rules.tampering import (
    FD_CALLS,
    FRAME_ATTRS,
    INTROSPECTION_CALLS,
    TIMER_NAMES,
    rule_evaluator_probe,
    rule_module_patches,
    rule_process_tampering,
)

PYTHON_RULES: list[Rule] = [
    rule_no_custom_kernel,
    rule_decoy_kernel,
    rule_returned_values,
    rule_input_mutation,
    rule_literal_guards,
    rule_forward_caches,
    rule_pointer_keys,
    rule_module_patches,
    rule_process_tampering,
    rule_evaluator_probe,
    rule_python_streams_threads,
    rule_tensor_subclass,
    rule_try_fallback,
    rule_subclass_reference,
    rule_precision,
    rule_dynamic_code,
    rule_norm_affine_dropped,
    rule_torch_compute,
]

__all__ = [
    "CONTAINER_FACTORIES",
    "CONTAINER_WRITES",
    "DECODE_CALLS",
    "DOWNCAST_DTYPES",
    "DOWNCAST_METHODS",
    "DYNAMIC_CALLS",
    "FD_CALLS",
    "FRAME_ATTRS",
    "HEAVY_TORCH_OPS",
    "INTROSPECTION_CALLS",
    "NN_LAYER_PREFIXES",
    "NORM_LAYERS",
    "PYTHON_RULES",
    "STREAM_CALLS",
    "SYNC_CALLS",
    "TIMER_NAMES",
    "Rule",
    "rule_decoy_kernel",
    "rule_dynamic_code",
    "rule_evaluator_probe",
    "rule_forward_caches",
    "rule_input_mutation",
    "rule_literal_guards",
    "rule_module_patches",
    "rule_no_custom_kernel",
    "rule_norm_affine_dropped",
    "rule_pointer_keys",
    "rule_precision",
    "rule_process_tampering",
    "rule_python_streams_threads",
    "rule_returned_values",
    "rule_subclass_reference",
    "rule_tensor_subclass",
    "rule_torch_compute",
    "rule_try_fallback",
]
