"""The reward-hack audit: static rules, KernelGuard, runtime signals and LLM judges.

Everything in this package except `judges.py` is pure Python (no Django, no torch) so the CLI, the services and the
tests can call it directly. See docs: /work/shared/docs/reward_hacks.md sections 3-5.
"""
