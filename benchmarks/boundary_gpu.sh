#!/usr/bin/env bash
# The boundary on a GPU machine, as root: the file-boundary attacks (tests/redteam/test_sandbox_files.py, real
# harness, per-worker cgroups as this machine allows) and the GPU red team (benchmarks/redteam_gpu.py).
#   bash benchmarks/boundary_gpu.sh OUT_DIR [RED_TEAM_BUDGET_S]
# bubblewrap: KBV_BWRAP, else `bwrap` on PATH, else the Debian packages in .debs/ unpacked here (not into /).
set -uo pipefail
OUT=${1:?usage: boundary_gpu.sh OUT_DIR [BUDGET_S]}
BUDGET=${2:-300}
mkdir -p "$OUT"
if [ -z "${KBV_BWRAP:-}" ] && ! command -v bwrap >/dev/null 2>&1 && compgen -G ".debs/*.deb" >/dev/null; then
    BW=$(mktemp -d /opt/kbv-bwrap.XXXXXX)
    for f in .debs/*.deb; do dpkg -x "$f" "$BW"; done
    chmod 755 "$BW"
    export KBV_BWRAP="$BW/usr/bin/bwrap" LD_LIBRARY_PATH="$BW/usr/lib/x86_64-linux-gnu:$BW/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
{
    date -u +"date: %Y-%m-%dT%H:%M:%SZ"; echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__)'
    echo "cgroup: $(stat -fc %T /sys/fs/cgroup) controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null)"
    python3 -m evaluator.harness.sandbox.namespaces
} 2>&1 | tee "$OUT/machine.txt"
start=$(date +%s)
python3 -m pytest -q -p no:cacheprovider tests/redteam/test_sandbox_files.py -o addopts="" -W ignore 2>&1 \
    | tee "$OUT/sandbox-files.txt" | tail -15
echo "sandbox files: $(( $(date +%s) - start )) s" | tee -a "$OUT/sandbox-files.txt"
start=$(date +%s)
PYTHONUNBUFFERED=1 python3 benchmarks/redteam_gpu.py --out "$OUT/rt" --jobs 12 --budget "$BUDGET" 2>&1 | tail -25
echo "red team: $(( $(date +%s) - start )) s"
