#!/bin/sh
# `--trace t.json.gz` against `--trace t.json`: the system's gzip (an implementation apart from the
# project's encoder) must find the compressed files intact and decode them to the plain bytes, for a
# training file with variants (one trace each) and for a serving trace.
#   trace_gzip_check.sh CLUSTERSIM REPOSITORY
set -eu
cs="$1"
root="$2"
command -v gzip >/dev/null || { echo "no gzip on this machine: skipped"; exit 77; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$cs" run "$root/scenarios/default.json" --trace "$dir/t.json" >/dev/null 2>&1
"$cs" run "$root/scenarios/default.json" --trace "$dir/t.json.gz" >/dev/null 2>&1
"$cs" infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 64 --rate 20 \
  --requests 200 --trace "$dir/s.json" >/dev/null 2>&1
"$cs" infer --model llama3.1-8b --cluster hgx-h100 --tp 1 --input-len 512 --output-len 64 --rate 20 \
  --requests 200 --trace "$dir/s.json.gz" >/dev/null 2>&1
n=0
for gz in "$dir"/*.json.gz; do
  plain="${gz%.gz}"
  [ -f "$plain" ] || { echo "FAIL: $gz has no plain twin $plain"; exit 1; }
  gzip -t "$gz" || { echo "FAIL: gzip -t rejects $gz"; exit 1; }
  gzip -dc "$gz" | cmp -s - "$plain" || { echo "FAIL: $gz does not decode to $plain"; exit 1; }
  echo "ok: $(basename "$gz") $(wc -c <"$gz") bytes, $(wc -c <"$plain") plain"
  n=$((n + 1))
done
[ "$n" -eq 3 ] || { echo "FAIL: expected 3 compressed traces (two variants, one serving), found $n"; exit 1; }
