"""python manage.py load_demo [--force]

Imports the project's own CPU-sized demo problems (problem set "demo") and submits the demo kernels as the LLM
"demo-llm", so a fresh installation shows the whole flow: the worker evaluates them within seconds. Idempotent:
the kernels are submitted once unless --force is given.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from django.core.management.base import BaseCommand

from catalogue.models import Submission
from leaderboard.services.problems import problems_import_path
from leaderboard.services.submissions import submission_create

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMO_SET = "demo"
DEMO_LLM = "demo-llm"


def demo_bundle() -> bytes:
    """The demo kernels as a KernelBench run folder, zipped (bundle format a)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted((DEMO_DIR / "kernels").glob("level_*_kernel.py")):
            zf.write(path, f"demo_run/{path.name}")
    return buf.getvalue()


class Command(BaseCommand):
    help = "Import the CPU demo problems and submit the demo kernels for evaluation."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--force", action="store_true", help="submit the demo kernels again")
        parser.add_argument("--hardware", default="cpu")

    def handle(self, *args, force: bool, hardware: str, **options) -> None:
        report = problems_import_path(path=DEMO_DIR / "problems", problem_set=DEMO_SET, demo=True)
        self.stdout.write(f"demo problems: {report.summary()}")
        if Submission.objects.filter(llm__name=DEMO_LLM, problem_set=DEMO_SET).exists() and not force:
            self.stdout.write("demo kernels already submitted (use --force to submit them again)")
            return
        submission = submission_create(
            uploader=None,
            llm_name=DEMO_LLM,
            organisation="KernelBench-Verified demo",
            filename="demo_run.zip",
            data=demo_bundle(),
            problem_set=DEMO_SET,
            hardware=hardware,
            notes="The project's own demo kernels: correct ones and the paper's classic hacks.",
            allow_duplicate=force,
        )
        self.stdout.write(
            self.style.SUCCESS(f"submitted {submission.kernel_count} demo kernels as submission {submission.pk}")
        )
