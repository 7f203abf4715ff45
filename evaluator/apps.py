from django.apps import AppConfig


class EvaluatorConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluator"
