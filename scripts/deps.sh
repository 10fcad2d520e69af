#!/usr/bin/env bash
# Install every Debian package atftrace needs to build, test, demo and benchmark.
# Idempotent and silent when nothing is missing; run by make when a tool or header is absent.
# ATFTRACE_DEPS=build installs only what builds the binary (deploy/Containerfile's build stage);
# ATFTRACE_DEPS=bench adds what only `make bench` runs (BENCH_PKGS), which make test never installs.
set -euo pipefail

BUILD_PKGS=(
  make gcc clang llvm                # build; clang/llvm-strip for the BPF object
  libbpf-dev bpftool                 # libbpf 1.1 + skeleton generator
  libelf-dev libdw-dev               # ELF symbols, build-ids
  libdebuginfod-dev                  # debug files from debuginfod servers (loaded at run time)
  liblz4-dev zlib1g-dev              # ZTS0 compression, CRC32
  libjansson-dev                     # manifest.json
  libzydis-dev                       # x86 decoder: moving entry instructions into trampolines
  libncurses-dev                     # the tui's screen (ncursesw, wide characters)
)
PKGS=(
  "${BUILD_PKGS[@]}"
  g++                                # C++ test targets
  libclang-rt-dev                    # clang's libFuzzer and sanitizer runtimes (tests/fuzz/)
  libc6-dbg                          # libc's debug symbols (_int_malloc, __strlen_avx2) for e2e tests
  debuginfod                         # a real debuginfod server for the e2e test of that lookup
  libcmocka-dev                      # unit tests
  libcbor-dev                        # ZTS0 test decoder (tests only)
  protobuf-compiler                  # Perfetto test decoding (protoc --decode)
  bpftrace                           # independent counts in e2e tests and benches
  linux-perf                         # perf stat and tracefs uprobe events in the guard e2e test
  python3 python3-yaml               # test helpers (deploy lint parses YAML)
  binutils util-linux procps         # objdump, unshare, pgrep
  jq time                            # e2e tests read JSON; benches read /usr/bin/time -v
  libsqlite3-dev sqlite3 zstd        # real third-party programs traced by e2e tests
  chromium                           # headless browser: speedscope loads our exports in a test
  tmux                               # the tui's e2e test drives it in a detached tmux pane
  strace                             # a tracer holding the target: restore's e2e test
  gdb                                # a debugger holding the target: the call-site rows test
  podman runc catatonit              # container tests: podman 4.3 with runc (crun refuses hybrid
                                     # cgroups), catatonit for the pods' infra container
  debootstrap debian-archive-keyring # the Debian 12 base images when no registry serves them
)
# make bench only (its recipe runs ATFTRACE_DEPS=bench scripts/deps.sh)
BENCH_PKGS=(
  nginx wrk                          # bench/bench_nginx.sh: the traced server and its load generator
)
build_only=0
case "${ATFTRACE_DEPS:-all}" in
  build) build_only=1 PKGS=("${BUILD_PKGS[@]}") ;;
  bench) PKGS+=("${BENCH_PKGS[@]}") ;;
esac

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# node/npm may come from another repository (e.g. nodesource's nodejs, which conflicts with Debian's npm):
# ask apt only for the commands that are really absent.
if [ $build_only = 0 ]; then
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm  >/dev/null 2>&1 || missing+=(npm)
fi

if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "deps.sh: missing packages: ${missing[*]} (run as root to install)" >&2
    exit 1
  fi
  echo "deps.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages for tests, pinned, installed under .output/npm so they never touch the system:
#   tracing-framework   the wtf-trace reference loader
#   speedscope          its release build is loaded in Chromium
#   kubernetes-models   the Kubernetes API's JSON schemas (compiled with ajv) for deploy/k8s/*.yaml
#   yaml                its YAML reader
here=$(cd "$(dirname "$0")/.." && pwd)
npm_dir="$here/.output/npm"
npm_pkg() {   # FILE-IT-INSTALLS PACKAGE@VERSION
  [ $build_only = 0 ] && [ ! -f "$npm_dir/node_modules/$1" ] || return 0
  mkdir -p "$npm_dir"
  # make -j runs this script once per missing package at the same time: one npm at a time
  exec 9>"$npm_dir/.lock" && flock 9
  [ ! -f "$npm_dir/node_modules/$1" ] || return 0
  (cd "$npm_dir" && npm install --silent --no-audit --no-fund --ignore-scripts --save-exact "$2" >/dev/null 2>&1) \
    || { echo "deps.sh: npm install $2 failed" >&2; exit 1; }
}
npm_pkg tracing-framework/bin/dump.js tracing-framework@2015.7.15-1
npm_pkg speedscope/dist/release/index.html speedscope@1.25.0
npm_pkg kubernetes-models/package.json kubernetes-models@5.1.0
npm_pkg yaml/package.json yaml@2.9.1
exit 0
