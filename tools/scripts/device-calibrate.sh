#!/usr/bin/env bash
# Prepared for a session lent a GPU machine (see the device tool's README): run from the repo root
# there. Binaries built here are x86-64 like it; carry them in .device/ (ignored by git) with the
# one library the image may lack:
#   mkdir -p .device && cp build/clustersim build/clustersim-probe /usr/lib/x86_64-linux-gnu/libtbb.so.12 .device/
#   device run: carry [".device"], command: "bash tools/scripts/device-calibrate.sh"
# It writes under $OUT: the measured profile and its kernel tables (clustersim calibrate), PyTorch's
# attention forward/backward, memory-bound kernel and layer timings (tools/scripts/measure_kernels.py),
# all packed in one archive (the device returns at most 8 files), and the logs.
set -uo pipefail
out="${OUT:-/tmp/cs-out}"
mkdir -p "$out/pack"
bin="${CS_BIN:-.device}"
[ -x "$bin/clustersim" ] || bin=build
# CUDA libraries: the toolkit's, else the ones PyTorch's wheels carry (cuBLAS, NCCL); then ours.
libs=/usr/local/cuda/lib64:/usr/local/cuda/lib
for d in $(python3 -c 'import glob,site; [print(p) for s in site.getsitepackages() for p in glob.glob(s+"/nvidia/*/lib")+glob.glob(s+"/nvidia/cu13/lib")]' 2>/dev/null); do
  libs="$libs:$d"
done
export LD_LIBRARY_PATH="$libs:$PWD/$bin:${LD_LIBRARY_PATH:-}"
{
  date -u
  nvidia-smi
  nvidia-smi -q -d CLOCK,POWER | head -60
  ldd "$bin/clustersim-probe"
} > "$out/pack/machine.txt" 2>&1
start=$(date +%s)
timeout 210 "$bin/clustersim" --data-dir "$PWD" calibrate --out "$out/pack/h200-sxm.measured.json" > "$out/pack/probe.log" 2>&1
echo "calibrate exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/pack/probe.log"
tail -25 "$out/pack/probe.log"
start=$(date +%s)
PYTHONUNBUFFERED=1 timeout 270 python3 tools/scripts/measure_kernels.py --out "$out/pack/torch" --budget-s 220 > "$out/pack/torch.log" 2>&1
echo "measure_kernels exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/pack/torch.log"
tail -15 "$out/pack/torch.log"
tar czf "$out/results.tar.gz" -C "$out/pack" .
cp "$out/pack/probe.log" "$out/pack/torch.log" "$out/" 2>/dev/null
ls -la "$out" "$out/pack"
