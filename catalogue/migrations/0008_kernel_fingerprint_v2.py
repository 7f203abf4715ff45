from django.db import migrations


def fill(apps, schema_editor):
    """Fingerprint every stored kernel again: v2 reads the syntax tree (local names, no-op statements, number
    spellings folded together; catalogue.fingerprint_ast), so renamed copies stored before share a fingerprint."""
    from catalogue.fingerprints import source_fingerprint

    Kernel = apps.get_model("catalogue", "Kernel")
    for kernel in Kernel.objects.only("id", "source").iterator(chunk_size=500):
        Kernel.objects.filter(pk=kernel.pk).update(fingerprint=source_fingerprint(kernel.source))


class Migration(migrations.Migration):

    dependencies = [
        ("catalogue", "0007_llm_skeletons_uts39"),
    ]

    operations = [
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
