"""Seed commitments published when the evaluation is queued, before the run (issue 40)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evaluator", "0006_seeds_reevaluations_webhooks"),
    ]

    operations = [
        migrations.AddField(
            model_name="seedcommitment",
            name="published_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When the digest was published, before the run (null: with the verdict).",
                null=True,
            ),
        ),
    ]
