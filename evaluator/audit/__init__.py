"""The reward-hack audit: static rules, KernelGuard, runtime signals and LLM judges.

Everything in this package except `config.py` (which reads Django settings) is plain Python: no Django, no torch,
so the CLI, the services and the tests can call it directly. `judges.py` needs the `openai` client.
`python -m evaluator.audit.measure` prints the static layer's precision/recall (benchmarks/results/audit.md).
Background: docs/reward_hacks.md sections 3-5, docs/protocol.md section 7.
"""
