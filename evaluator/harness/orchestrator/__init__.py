"""The orchestrator side: the process that drives an evaluation and writes its verdict. It imports no torch and
runs no kernel code; it trusts only what its clean reference worker computes and what it measures itself."""
