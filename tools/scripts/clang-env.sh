# Sourced by tools/scripts/fuzz and tools/scripts/sanitize: installs clang and its sanitizer and
# libFuzzer runtimes from Debian when missing (clang, libclang-rt-dev), and configures BUILD (a
# clang build folder of its own) with the given CMake options when it has not been configured yet.
# Both scripts share build-asan/ (address + undefined behaviour, fuzz targets included), so CI
# compiles the instrumented tree once.
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
ensure_clang() {
  local need=()
  command -v clang++ >/dev/null 2>&1 || need+=(clang)
  have_pkg libclang-rt-dev || ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
    need+=(libclang-rt-dev)
  if [ ${#need[@]} -gt 0 ]; then
    echo "clustersim: installing ${need[*]} (clang and its sanitizer runtimes)" >&2
    local sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
  fi
}
# configure_clang BUILD_DIR CMAKE_OPTIONS...
configure_clang() {
  local build="$1"
  shift
  if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCLUSTERSIM_CUDA=OFF -DCLUSTERSIM_WERROR=OFF "$@" >&2
  fi
}
