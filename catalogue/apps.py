from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    """LLMs, problems, submissions, kernels and API tokens: the bottom of the house (imports no other app).

    The label stays "leaderboard", the app these models were born in: tables, migrations, content types,
    permissions and admin URLs (/admin/leaderboard/...) are those of before the split, with no data migration.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "catalogue"
    label = "leaderboard"
