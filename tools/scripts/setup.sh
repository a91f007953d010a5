#!/usr/bin/env bash
# Shared by tools/run and tools/test: install what is missing (Debian packages, only when
# missing), then configure and build a Release build in build/. Idempotent and quick when
# nothing changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

need=()
# CLUSTERSIM_MPI=ON also installs Open MPI and builds with it (mpirun -n K clustersim sweep,
# docs/sweep.md); without it, MPI is used when already installed (CMake finds it), else left out.
mpi="${CLUSTERSIM_MPI:-}"
extra=()
if [ "$mpi" = ON ]; then extra=(libopenmpi-dev openmpi-bin); fi
# chromium: only the test command needs it (the report_browser_check test opens the HTML reports
# in it, tools/scripts/check-reports); tools/test sets CLUSTERSIM_SETUP_FOR_TESTS=1.
if [ "${CLUSTERSIM_SETUP_FOR_TESTS:-}" = 1 ]; then extra+=(chromium); fi
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in cmake ninja-build g++ libboost-graph-dev libtbb-dev libcli11-dev nlohmann-json3-dev doctest-dev \
  "${extra[@]}"; do
  have_pkg "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "clustersim: installing missing packages: ${need[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

build="${CLUSTERSIM_BUILD_DIR:-$root/build}"
werror="${CLUSTERSIM_WERROR:-OFF}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLUSTERSIM_WERROR="$werror" >&2
fi
if [ -n "$mpi" ]; then cmake -S "$root" -B "$build" -DCLUSTERSIM_MPI="$mpi" >/dev/null; fi
cmake --build "$build" -j "$(nproc)" >&2
