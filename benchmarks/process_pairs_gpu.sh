#!/usr/bin/env bash
# Issue 17, part 2 on the H200: five repeats per problem, before (one process pair, fixed 10-call blocks: the old
# protocol) and after (the defaults: two process pairs below 1 ms, blocks sized to 20 ms), then the GPU red-team
# case that under-reports a short kernel. Results go to $OUT; the table goes into
# benchmarks/results/process-pairs-h200.md (spread.* in each *_summary.json: max_deviation_from_median,
# cis_containing_median). Two device commands of under 600 s each: PART=spread, then PART=redteam. Each bundle
# run stops starting evaluations at --deadline (seconds); a repeat cut off is listed, not invented.
#
#   OUT=$OUT PART=spread bash benchmarks/process_pairs_gpu.sh
#   OUT=$OUT PART=redteam bash benchmarks/process_pairs_gpu.sh
#   OUT=$OUT PART=adaptive [TAG=lead DEADLINE=300 ONLY='L1/10 L3/4'] bash benchmarks/process_pairs_gpu.sh   # the defaults now
set -euo pipefail
OUT=${OUT:-/tmp/kbv-process-pairs}
PART=${PART:-spread}
PROBLEMS="L1/10 L2/12 L3/4"  # TF32 baselines 0.22, 0.41, 0.84 ms on the H200: sub-ms, one per level
COMMON=(--out "$OUT" --gpus 0 --slots 1 --repeats 5 --only $PROBLEMS --cache /tmp/kbv-cache-pp)
if [ "$PART" = spread ]; then
  python3 benchmarks/bundle_gpu.py "${COMMON[@]}" --tag before --process-pairs 1 --target-block-ms 0 --deadline 230
  python3 benchmarks/bundle_gpu.py "${COMMON[@]}" --tag after --deadline 280
  for tag in before after; do
    python3 -c "import json,sys; print(sys.argv[1], json.dumps(json.load(open(sys.argv[2]))['spread'], indent=1))" \
      "$tag" "$OUT/${tag}_summary.json"
  done
elif [ "$PART" = adaptive ]; then
  python3 benchmarks/bundle_gpu.py --out "$OUT" --gpus 0 --slots 1 --repeats 5 --only ${ONLY:-L1/10 L2/12} \
    --cache /tmp/kbv-cache-pp --tag "${TAG:-adaptive}" --deadline "${DEADLINE:-450}"
  python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['spread'], indent=1))" \
    "$OUT/${TAG:-adaptive}_summary.json"
else
  python3 benchmarks/redteam_gpu.py --out "$OUT" --only a5_underreport,legit_fused_scale_add --budget 400
fi
