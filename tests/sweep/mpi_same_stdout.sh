#!/bin/sh
# A command split among two MPI ranks prints the same bytes as one process (clustersim plan).
# Usage: mpi_same_stdout.sh MPIEXEC CLUSTERSIM ARGS...   (run by CTest when built with MPI)
set -eu
mpiexec=$1
bin=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" --threads 1 "$@" >"$dir/one.out" 2>/dev/null
"$mpiexec" --oversubscribe --allow-run-as-root -n 2 "$bin" --threads 1 "$@" >"$dir/two.out" 2>/dev/null
[ -s "$dir/one.out" ] || { echo "no output from one process" >&2; exit 1; }
cmp "$dir/one.out" "$dir/two.out" || { echo "output differs between 1 process and 2 ranks" >&2; exit 1; }
echo "2 ranks = 1 process ($(wc -c <"$dir/one.out") bytes)"
