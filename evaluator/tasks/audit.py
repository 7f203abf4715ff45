"""Celery tasks that run LLM-judge audits."""
