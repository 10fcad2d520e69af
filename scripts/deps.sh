#!/usr/bin/env bash
# Install every Debian package atftrace needs to build, test, demo and benchmark.
# Idempotent and silent when nothing is missing; run by make when a tool or header is absent.
set -euo pipefail

PKGS=(
  make gcc g++ clang llvm            # build; clang/llvm-strip for the BPF object; g++ for C++ test targets
  libclang-rt-dev                    # clang's libFuzzer and sanitizer runtimes (tests/fuzz/)
  libbpf-dev bpftool                 # libbpf 1.1 + skeleton generator
  libelf-dev libdw-dev               # ELF symbols, build-ids
  libdebuginfod-dev                  # debug files from debuginfod servers (DEBUGINFOD_URLS)
  libc6-dbg                          # libc's debug symbols (_int_malloc, __strlen_avx2) for e2e tests
  debuginfod                         # a real debuginfod server for the e2e test of that lookup
  liblz4-dev zlib1g-dev              # ZTS0 compression, CRC32
  libjansson-dev                     # manifest.json
  libcmocka-dev                      # unit tests
  libcbor-dev                        # ZTS0 test decoder (tests only)
  protobuf-compiler                  # Perfetto test decoding (protoc --decode)
  bpftrace                           # independent counts in e2e tests and benches
  python3 python3-yaml               # test helpers (deploy lint parses YAML)
  binutils util-linux procps         # objdump, unshare, pgrep
  jq time                            # e2e tests read JSON; benches read /usr/bin/time -v
  libsqlite3-dev sqlite3 zstd        # real third-party programs traced by e2e tests
  chromium                           # headless browser: speedscope loads our exports in a test
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# node/npm may come from another repository (e.g. nodesource's nodejs, which conflicts with Debian's npm):
# ask apt only for the commands that are really absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm  >/dev/null 2>&1 || missing+=(npm)

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

# npm packages for tests only, pinned, installed under .output/ so they never touch the system:
# the wtf-trace reference loader, and speedscope (its release build is loaded in Chromium).
here=$(cd "$(dirname "$0")/.." && pwd)
npm_dir="$here/.output/npm"
npm_pkg() {   # NAME VERSION FILE-IT-PROVIDES
  [ "${ATFTRACE_SKIP_NPM:-0}" != 1 ] && [ ! -f "$npm_dir/node_modules/$1/$3" ] || return 0
  mkdir -p "$npm_dir"
  (cd "$npm_dir" && npm install --silent --no-audit --no-fund --ignore-scripts --save-exact "$1@$2" >/dev/null 2>&1) \
    || { echo "deps.sh: npm install $1@$2 failed" >&2; exit 1; }
}
npm_pkg tracing-framework 2015.7.15-1 bin/dump.js
npm_pkg speedscope 1.25.0 dist/release/index.html
exit 0
