#!/usr/bin/env bash
# The GPU policy by class, in one sitting of a few minutes on one H200 (sandbox on): a stratified sample of the
# bundle (12 problems whose TF32 baseline peaks above 1 GB, 10 small ones, 8 L3 networks, from the committed sweep
# benchmarks/results/baselines-h200.jsonl), the three repeat problems 4 at once, the per-process speed of L1/68, and
# the load_inline kernels 8 at once (5 repeats each). Rows and summaries go to $OUT; figures into benchmarks/results/.
# Each part's limit (SAMPLE_S, REPEATS_S, REAL8_S) is what it needed on an H100 on 2026-12-07: the repeats on a fresh
# machine, the sample and the load_inline kernels in a second sitting on the same machine, their compile caches
# (/tmp/kbv-cache-*) warm from a first one cut short (the load_inline builds alone take 58-112 s). One or two parts
# per device command (10 minutes at most).
#
#   OUT=$OUT bash benchmarks/policy_sample_gpu.sh            # every part
#   OUT=$OUT PARTS="sample repeats" bash benchmarks/policy_sample_gpu.sh
#   OUT=$OUT PARTS=hog HOG_GIB="0 32 64" bash benchmarks/policy_sample_gpu.sh   # not in the default parts
set -uo pipefail
OUT=${OUT:-/tmp/kbv-policy}
PARTS=${PARTS:-"sample repeats process real8"}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=1
source benchmarks/bwrap_from_debs.sh  # bubblewrap from .debs/ where the machine has none
SUMMARY='import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps({k: s.get(k) for k in ("evaluated","wall_s","statuses","sandbox","exclusive_timing_share","sum_exclusive_s","sum_exclusive_timing_s","sum_exclusive_other_s","pair_starts_under_exclusive_lock","sum_gpu_wait_s","timing_unstable","spread","declarations")}))'
SAMPLE="L2/36 L1/77 L1/59 L1/22 L2/26 L2/46 L2/21 L3/25 L2/16 L1/84 L2/65 L2/78 L1/12 L2/80 L2/70 L2/97 L1/3 L2/23
L2/39 L2/73 L2/48 L1/60 L3/1 L3/33 L3/19 L3/32 L3/22 L3/20 L3/10 L3/35"
for part in $PARTS; do
  start=$(date +%s)
  case $part in
    sample) timeout "${SAMPLE_S:-320}" python3 benchmarks/bundle_gpu.py --out "$OUT" --tag sample --slots "${SLOTS:-6}" \
              --prestart --only $SAMPLE --cache /tmp/kbv-cache-sample --deadline $(( ${SAMPLE_S:-320} - 40 ))
            python3 -c "$SUMMARY" "$OUT/sample_summary.json" ;;
    repeats) timeout "${REPEATS_S:-330}" python3 benchmarks/bundle_gpu.py --out "$OUT" --tag repeats --slots 4 --repeats 5 \
              --only L2/14 L3/20 L1/68 --cache /tmp/kbv-cache-repeats --deadline $(( ${REPEATS_S:-330} - 40 ))
            python3 -c "$SUMMARY" "$OUT/repeats_summary.json" ;;
    process) timeout 80 python3 benchmarks/per_process_speed_gpu.py --only L1/68 --processes 4 --concurrent 1 \
              --out "$OUT/per_process_L1_68.jsonl" | tail -1 ;;
    hog) for gib in ${HOG_GIB:-0 16 32 48 64 96}; do  # where L1/68's +6 % begins: what another process holds
           timeout 90 python3 benchmarks/per_process_speed_gpu.py --only L1/68 --processes 2 --hog-gb "$gib" \
             --out "$OUT/hog_${gib}.jsonl" | tail -1 | sed "s/^/hog ${gib} GiB: /"
         done ;;
    real8) timeout "${REAL8_S:-280}" python3 benchmarks/bundle_gpu.py --out "$OUT" --tag real8 --slots 8 --prestart \
              --repeats 5 --only L1/1 L1/19 L2/1 L3/1 --cache /tmp/kbv-cache-real8 --deadline $(( ${REAL8_S:-280} - 50 ))
            python3 -c "$SUMMARY" "$OUT/real8_summary.json" ;;
  esac
  echo "part $part: $(( $(date +%s) - start )) s"
done
