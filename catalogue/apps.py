from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    """LLMs, problems, submissions, kernels and API tokens: the bottom of the house (imports no other app).

    These models were born in the leaderboard app, under its label: migrations 0001-0005 replace the ones recorded
    under "leaderboard", and 0006 renames their tables and moves their content types (and so permissions) over.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "catalogue"
