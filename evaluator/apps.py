from django.apps import AppConfig


class EvaluatorConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluator"

    def ready(self) -> None:
        # The services send tasks by name (evaluator/enqueue.py): register them in every process that runs Django.
        from evaluator import tasks  # noqa: F401
