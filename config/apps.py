from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """The project's own wiring, installed after every app (config sits above them all; no app imports config)."""

    name = "config"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from config.private_files import make_sqlite_private

        connection_created.connect(make_sqlite_private, dispatch_uid="kbv-private-sqlite")
