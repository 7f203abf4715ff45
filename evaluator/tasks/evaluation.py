"""Celery tasks that run harness evaluations."""
