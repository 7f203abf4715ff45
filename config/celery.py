"""The Celery app. Configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import os
import sys

from celery import Celery

from evaluator.service_user import drop_privileges, is_celery_program

# `celery -A config ...` started as root: the service user before the app loads (a worker: the launcher first)
celery_program, worker = is_celery_program(sys.argv)
if celery_program:
    drop_privileges("celery worker" if worker else "celery", launcher=worker)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("kernelbench_verified")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
