"""Columns for what queries filter and rank on, read from each record by the projection (evaluator/record_projection.py)
instead of JSON paths into `result` (issue 39): `timing.unstable`, `speed_of_light.fraction` and the stack's parts
of `environment`. Stored rows are filled from their records here; the rule is the projection's, written out again
because a migration must not change when the code does (tests/pipeline/test_record_columns.py holds them equal)."""

import math

from django.db import migrations, models

STACK_COLUMNS = {"torch": "env_torch", "cuda": "env_cuda", "driver": "env_driver", "device_name": "env_device_name"}
BATCH = 500


def _part(record, key):
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, dict) else {}


def record_columns(record):
    """The new columns of one stored record (any age: absent or malformed parts read as the projection reads them)."""
    fraction = _part(record, "speed_of_light").get("fraction")
    number = isinstance(fraction, int | float) and not isinstance(fraction, bool) and math.isfinite(fraction)
    env = _part(record, "environment")
    return {
        "timing_unstable": _part(record, "timing").get("unstable") is True,
        "speed_of_light_fraction": float(fraction) if number and fraction > 0 else None,
        **{column: env[key][:200] if isinstance(env.get(key), str) else "" for key, column in STACK_COLUMNS.items()},
    }


def backfill(apps, schema_editor):
    Evaluation = apps.get_model("evaluator", "Evaluation")
    names = ["timing_unstable", "speed_of_light_fraction", *STACK_COLUMNS.values()]
    batch = []
    for evaluation in Evaluation.objects.filter(result__isnull=False).only("pk", "result").iterator(chunk_size=BATCH):
        for name, value in record_columns(evaluation.result).items():
            setattr(evaluation, name, value)
        batch.append(evaluation)
        if len(batch) >= BATCH:
            Evaluation.objects.bulk_update(batch, names)
            batch = []
    if batch:
        Evaluation.objects.bulk_update(batch, names)


class Migration(migrations.Migration):
    dependencies = [
        ("evaluator", "0007_seedcommitment_published_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="timing_unstable",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="speed_of_light_fraction",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="env_torch",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="env_cuda",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="env_driver",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="env_device_name",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
