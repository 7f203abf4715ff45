#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys

EVALUATING = {"evaluate_kernel", "reproduce"}  # they run the harness in this process: the launcher first


def main() -> None:
    from evaluator.service_user import drop_privileges  # before the app: no command runs as root

    command = sys.argv[1] if len(sys.argv) > 1 else ""
    drop_privileges(f"manage.py {command}".strip(), launcher=command in EVALUATING)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
