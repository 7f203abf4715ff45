"""`manage.py rerun_champions [--hardware LABEL]`: queue re-evaluations of the best kernels per problem and LLM
measured on another software stack than their hardware's workers run now, within RERUN_GPU_SECONDS_PER_DAY
(beat runs it every RERUN_INTERVAL seconds)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from evaluator.services.reruns import champions_rerun, rerun_queue_for


class Command(BaseCommand):
    help = "Re-evaluate champions measured on an older torch/CUDA/driver/GPU, within the re-run budget."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--hardware", help="one hardware label (default: every label with ranked kernels)")

    def handle(self, *args, **opts) -> None:
        for plan in champions_rerun(hardware=opts["hardware"]):
            self.stdout.write(
                f"{plan.hardware}: workers run {plan.stack or 'an unknown stack'}; queued {len(plan.queued)} on "
                f"{rerun_queue_for(plan.hardware)}, {len(plan.over_budget)} left for the next day's budget"
            )
