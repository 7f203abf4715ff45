from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "leaderboard"
    # "leaderboard" is the catalogue's label (catalogue/apps.py): its models kept their tables and admin URLs.
    label = "board"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from config.private_files import make_sqlite_private

        connection_created.connect(make_sqlite_private, dispatch_uid="kbv-private-sqlite")
