from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "leaderboard"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from config.private_files import make_sqlite_private

        connection_created.connect(make_sqlite_private, dispatch_uid="kbv-private-sqlite")
