#!/usr/bin/env bash
# Prepared for a session lent a GPU machine (see the device tool's README): run from the repo root
# there, with build/ carried (binaries built here are x86-64 like it). Writes the measured profile,
# the probe's log and a comparison run under $OUT.
#   device run: carry ["build"], command: "bash tools/scripts/device-calibrate.sh"
set -uo pipefail
out="${OUT:-/tmp/cs-out}"
mkdir -p "$out"
# CUDA libraries: the toolkit's, else the ones PyTorch's wheels carry (cuBLAS, NCCL).
libs=/usr/local/cuda/lib64:/usr/local/cuda/lib
for d in $(python3 -c 'import glob,site; [print(p) for s in site.getsitepackages() for p in glob.glob(s+"/nvidia/*/lib")]' 2>/dev/null); do
  libs="$libs:$d"
done
export LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
nvidia-smi topo -m > "$out/topo.txt" 2>&1
build/clustersim calibrate --out "$out/h200-sxm.measured.json" 2>&1 | tee "$out/probe.log"
build/clustersim inspect "$out/h200-sxm.measured.json" >> "$out/probe.log" 2>&1
build/clustersim train --model llama3.1-8b --cluster hgx-h200 --gpus 1 --profile "$out/h200-sxm.measured.json" \
  --tp 1 --seq 4096 --global-batch 4 --allow-oom >> "$out/probe.log" 2>&1
ls -la "$out"
