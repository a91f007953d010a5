#!/bin/sh
# A sweep split among two MPI ranks writes the same bytes (JSON on stdout, CSV) as one process.
# Usage: mpi_identity.sh MPIEXEC CLUSTERSIM SWEEP_FILE...   (run by CTest when built with MPI)
set -eu
mpiexec=$1
bin=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for f in "$@"; do
  "$bin" --threads 1 sweep "$f" --json --csv "$dir/one.csv" >"$dir/one.json" 2>/dev/null
  "$mpiexec" --oversubscribe --allow-run-as-root -n 2 "$bin" --threads 1 sweep "$f" --json --csv "$dir/two.csv" \
    >"$dir/two.json" 2>/dev/null
  grep -q '"status": "ok"' "$dir/one.json" || { echo "$f: no point ran" >&2; exit 1; }
  cmp "$dir/one.json" "$dir/two.json" || { echo "$f: JSON differs between 1 process and 2 ranks" >&2; exit 1; }
  cmp "$dir/one.csv" "$dir/two.csv" || { echo "$f: CSV differs between 1 process and 2 ranks" >&2; exit 1; }
  echo "$f: 2 ranks = 1 process ($(wc -l <"$dir/one.csv") CSV lines)"
done
