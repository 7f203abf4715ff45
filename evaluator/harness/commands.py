"""The commands the orchestrator sends its two workers, declared once for both ends of each pipe.

The orchestrator's clients (clients.py) send them and the workers' handler tables (`serve({...})` in
reference_worker.py and candidate_worker.py) answer them, so a renamed or misspelt command fails at import or in
tests/harness/test_commands.py, not as an "unknown command" half-way through an evaluation. stdlib only: both the
orchestrator (which never imports torch) and the workers import this.

A `StrEnum` member is its own string: it travels as plain JSON ("run") and looks up a handler keyed by the string
the worker reads off its pipe.
"""

from __future__ import annotations

from enum import StrEnum


class Command(StrEnum):
    # both workers
    WARM_UP = "warm_up"  # first-use costs (CUDA context, meta device) before the problem is known
    PROBE_HANDOVER = "probe_handover"  # can outputs cross by cuda_fd / CUDA IPC? (handover.py, cuda_fd.py)
    TIMING_SETUP = "timing_setup"
    TIME_BLOCK = "time_block"
    MEMORY = "memory"
    LAUNCHED_KERNELS = "launched_kernels"  # the device kernels of one call, by torch.profiler (profiling.py)
    EXIT = "exit"  # handled by the command loop itself (command_loop.py), never by a handler
    # the reference worker
    SURVEY = "survey"  # the problem loaded and counted on the meta device, before any CUDA context
    SETUP = "setup"
    MAKE_TRIAL = "make_trial"
    COMPARE = "compare"
    CONSTANT = "constant"
    RANDOMISE = "randomise"
    FRESH_SETS = "fresh_sets"
    RECHECK = "recheck"
    PRECISION_FLAGS = "precision_flags"  # the flags each phase ran under, read back (the record's environment)
    DEVICE_MEMORY = "device_memory"  # the device's free memory as the driver counts it (after an out-of-memory)
    # the candidate worker
    LOAD = "load"
    LOAD_PARAMS = "load_params"
    EXTENSIONS_DIR = "extensions_dir"
    SET_PROBLEM = "set_problem"
    USE_HANDOVER = "use_handover"
    RUN = "run"
    RELEASE = "release"
    SAVE_KEPT = "save_kept"
    TIME_FRESH = "time_fresh"
    INTEGRITY = "integrity"


# What each worker's handler table answers (tests/harness/test_commands.py holds the tables to these).
REFERENCE_COMMANDS = frozenset(
    {
        Command.WARM_UP,
        Command.SURVEY,
        Command.SETUP,
        Command.MAKE_TRIAL,
        Command.COMPARE,
        Command.CONSTANT,
        Command.RANDOMISE,
        Command.TIMING_SETUP,
        Command.TIME_BLOCK,
        Command.MEMORY,
        Command.LAUNCHED_KERNELS,
        Command.RECHECK,
        Command.FRESH_SETS,
        Command.PROBE_HANDOVER,
        Command.PRECISION_FLAGS,
        Command.DEVICE_MEMORY,
    }
)
CANDIDATE_COMMANDS = frozenset(
    {
        Command.WARM_UP,
        Command.LOAD,
        Command.LOAD_PARAMS,
        Command.RUN,
        Command.TIMING_SETUP,
        Command.TIME_BLOCK,
        Command.SAVE_KEPT,
        Command.TIME_FRESH,
        Command.MEMORY,
        Command.LAUNCHED_KERNELS,
        Command.INTEGRITY,
        Command.SET_PROBLEM,
        Command.EXTENSIONS_DIR,
        Command.PROBE_HANDOVER,
        Command.USE_HANDOVER,
        Command.RELEASE,
    }
)
