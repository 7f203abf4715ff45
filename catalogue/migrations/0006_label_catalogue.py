# The catalogue's models were born in the leaderboard app and kept its label ("leaderboard") after the split; the
# leaderboard app went by "board". Each app now has its own name as its label. On a database made before:
# - migrations 0001-0005 replace the same ones recorded under "leaderboard", so they count as applied;
# - this one renames the tables leaderboard_<model> to catalogue_<model> (and the one named index), and moves the
#   models' content types to the "catalogue" label, which keeps their permissions and their users' and groups'
#   grants (and admin log entries). A fresh database creates leaderboard_<model> in 0001-0005 and renames it here.

from django.db import migrations

MODELS = ("llm", "problem", "submission", "kernel", "apitoken")


def content_types_to(old: str, new: str):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        types = ContentType.objects.using(schema_editor.connection.alias)
        for model in MODELS:
            if types.filter(app_label=old, model=model).exists():
                types.filter(app_label=new, model=model).delete()  # made by a migrate run under the new label
                types.filter(app_label=old, model=model).update(app_label=new)

    return move


class Migration(migrations.Migration):
    dependencies = [
        ("catalogue", "0005_kernel_fingerprint_llm_skeleton"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RenameIndex(
            model_name="problem",
            new_name="catalogue_p_level_356f5b_idx",
            old_name="leaderboard_level_b214a2_idx",
        ),
        migrations.AlterModelTable(name="apitoken", table=None),
        migrations.AlterModelTable(name="kernel", table=None),
        migrations.AlterModelTable(name="llm", table=None),
        migrations.AlterModelTable(name="problem", table=None),
        migrations.AlterModelTable(name="submission", table=None),
        migrations.RunPython(
            content_types_to("leaderboard", "catalogue"), content_types_to("catalogue", "leaderboard"), elidable=False
        ),
    ]
