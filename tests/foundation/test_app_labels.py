"""Each app's label is its name; the catalogue's models, born under the label "leaderboard", moved over in
catalogue/migrations/0006_label_catalogue.py with their tables, content types and permissions."""

from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("catalogue", "0005_kernel_fingerprint_llm_skeleton")]
AFTER = [("catalogue", "0006_label_catalogue")]
INSERT_LLM = (
    "INSERT INTO leaderboard_llm (name, organisation, notes, created_at, name_skeleton) "
    "VALUES ('kept', '', '', CURRENT_TIMESTAMP, 'kept')"
)


def test_each_project_app_is_labelled_by_its_name():
    for name in ("catalogue", "evaluator", "leaderboard", "inspector"):
        assert apps.get_app_config(name).name == name
    assert {model._meta.db_table for model in apps.get_app_config("catalogue").get_models()} == {
        "catalogue_llm",
        "catalogue_problem",
        "catalogue_submission",
        "catalogue_kernel",
        "catalogue_apitoken",
    }


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_keeps_its_rows_and_grants():
    alice = User.objects.create_user("alice")
    alice.user_permissions.add(Permission.objects.get(content_type__app_label="catalogue", codename="change_llm"))
    try:
        _migrate(BEFORE)  # as a database made under the former label looks
        tables = set(connection.introspection.table_names())
        assert "leaderboard_llm" in tables and "catalogue_llm" not in tables
        assert ContentType.objects.filter(app_label="leaderboard", model="llm").exists()
        with connection.cursor() as cursor:
            cursor.execute(INSERT_LLM)
    finally:
        _migrate(AFTER)
    try:
        assert {"catalogue_llm", "catalogue_kernel"} <= set(connection.introspection.table_names())
        assert not ContentType.objects.filter(app_label="leaderboard").exists()
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())  # the later migrations: as before the test
    from catalogue.models import LLM

    assert LLM.objects.filter(name="kept").exists()
    alice = User.objects.get(pk=alice.pk)  # a fresh permission cache
    assert alice.has_perm("catalogue.change_llm")


@pytest.mark.django_db
def test_a_gpu_run_exported_under_the_former_label_still_loads():
    from pathlib import Path

    from django.core.management import call_command

    from catalogue.models import Kernel

    fixture = Path(__file__).resolve().parents[2] / "leaderboard" / "fixtures" / "h200_e2e.json"
    assert '"model": "leaderboard.kernel"' in fixture.read_text()  # exported before the catalogue had its own label
    call_command("load_gpu_results", str(fixture), stdout=StringIO())
    assert Kernel.objects.filter(submission__llm__name__isnull=False).count() == 25
