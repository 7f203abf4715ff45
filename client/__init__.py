"""kbv client: submit kernel bundles to a KernelBench-Verified server and wait for the results.

Standard library only (urllib), so a lab can run it with any Python 3.9+: `python -m client submit --help`.
"""
