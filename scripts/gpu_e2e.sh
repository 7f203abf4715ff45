#!/usr/bin/env bash
# The product end to end on a GPU machine (issue 20): wheels -> venv -> migrate -> import problems -> token ->
# web server + one Celery worker per GPU (sandbox on) -> upload a bundle through the REST API -> wait with the CLI
# client -> leaderboard rows and every verdict -> record (JSON + Markdown) and a results fixture in OUT_DIR.
#
#   bash scripts/gpu_e2e.sh OUT_DIR [--device cuda|cpu] [--bundle full|two] [--no-install] ...   (see --help)
#
# Needs only the machine's python3 (with its own torch) and the `wheels/` folder that `make wheels` fills on a
# connected machine. bubblewrap: KBV_BWRAP, else `bwrap` on PATH, else the Debian packages in `.debs/` unpacked here.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${KBV_BWRAP:-}" ] && ! command -v bwrap >/dev/null 2>&1 && compgen -G ".debs/*.deb" >/dev/null; then
    BW=$(mktemp -d /tmp/kbv-bwrap.XXXXXX)
    for f in .debs/*.deb; do dpkg -x "$f" "$BW"; done
    export KBV_BWRAP="$BW/usr/bin/bwrap"
    chmod -R o+rX "$BW"  # the evaluation's own unprivileged user runs it
fi
export PYTHONUNBUFFERED=1
# Each kernel runs as a uid of its own: it must reach the interpreter and evaluator/harness (o+x on the way, as
# `make install` does; never r or w).
"${PYTHON:-python3}" -m evaluator.harness.sandbox.privileges --open || true
exec "${PYTHON:-python3}" scripts/gpu_e2e.py "$@"
