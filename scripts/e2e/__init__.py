"""The steps of scripts/gpu_e2e.py (the product end to end on one machine), one module each: common (paths, log,
checked run), bundle (what is uploaded), install (the venv from wheels/), stack (migrate, web server, Celery
workers, export), collect (machine facts, every evaluation read back), report (benchmark comparison, Markdown)."""
