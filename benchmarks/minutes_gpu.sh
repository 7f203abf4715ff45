#!/usr/bin/env bash
# A bundle in minutes, and repeats that agree, on one H200 with the sandbox on. Results go to $OUT; the figures go
# into benchmarks/results/ (command, device, date) and the README's Performance section.
#
#   OUT=$OUT PART=repeats bash benchmarks/minutes_gpu.sh   # 5 repeats x 3 problems, 4 evaluations at once
#   OUT=$OUT PART=bundle  bash benchmarks/minutes_gpu.sh   # the 250-kernel bundle, cold compile cache
#   OUT=$OUT PART=bundle STATE=/persistent/dir bash ...   # the same split over sittings (one command <= 600 s)
#
# repeats: L2/14 (GEMM, TF32 0.40 ms: sub-ms), L3/20 (MobileNetV2, 3.7 ms, launch-bound: three process pairs),
# L1/68 (3D transposed conv, 33.6 ms: the largest L1), 5 each, 4 slots on GPU 0. Targets, in the summary's
# spread.*: within_5pct (stretch within_2pct) and cis_above_0_under_2x for every problem; timing_unstable says how
# many repeats the harness would not rank.
# bundle: targets evaluated = 250 under 600 s wall (stretch 300), exclusive_timing_share >= 0.8,
# pair_starts_under_exclusive_lock = 0, sandbox ["namespaces"].
set -euo pipefail
OUT=${OUT:-/tmp/kbv-minutes}
source benchmarks/bwrap_from_debs.sh  # bubblewrap from .debs/ where the machine has none
PART=${PART:-repeats}
STATE=${STATE:-$OUT}
SUMMARY='import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps({k: s.get(k) for k in ("evaluated","wall_s","statuses","sandbox","exclusive_timing_share","sum_exclusive_s","sum_exclusive_timing_s","sum_exclusive_other_s","pair_starts","sum_pair_start_s","pair_starts_under_exclusive_lock","sum_gpu_wait_s","timing_unstable","spread")}, indent=1))'
if [ "$PART" = repeats ]; then
  python3 benchmarks/bundle_gpu.py --out "$OUT" --tag repeats --gpus 0 --slots 4 --repeats 5 \
    --only L2/14 L3/20 L1/68 --cache /tmp/kbv-cache-minutes --deadline "${DEADLINE:-480}"
  python3 -c "$SUMMARY" "$OUT/repeats_summary.json"
else
  [ -e "$STATE/bundle.jsonl" ] || rm -rf /tmp/kbv-cache-minutes-cold  # cold: nothing built (a later sitting keeps it)
  python3 benchmarks/bundle_gpu.py --out "$OUT" --state "$STATE" --tag bundle --gpus 0 --slots "${SLOTS:-4}" \
    --prestart --cache /tmp/kbv-cache-minutes-cold --deadline "${DEADLINE:-540}"
  python3 -c "$SUMMARY" "$OUT/bundle_summary.json"
fi
