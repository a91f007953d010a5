#!/bin/sh
# GPU test (CTest label "gpu"): a quick calibration, then a simulation that uses its profile.
# Exits 77 (skipped) when no GPU or no probe is available, as `clustersim calibrate` then exits 3.
bin="$1"
out="$(mktemp -d)/box.json"
"$bin" calibrate --quick --out "$out"
code=$?
if [ $code -eq 3 ]; then echo "no GPU here: skipped"; exit 77; fi
[ $code -eq 0 ] || { echo "calibrate failed with $code"; exit 1; }
"$bin" train --model llama3.1-8b --cluster hgx-h100 --gpus 1 --profile "$out" --tp 1 --seq 2048 --global-batch 1 --allow-oom --json > "$out.run" || exit 1
grep -q '"profile_origin": "measured"' "$out.run" || { echo "the run did not use the measured profile"; exit 1; }
"$bin" inspect "$out" || exit 1
echo "ok: $out"
