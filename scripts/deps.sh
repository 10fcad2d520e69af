#!/usr/bin/env bash
# Install every Debian package atftrace needs to build, test, demo and benchmark.
# Idempotent and silent when nothing is missing; run by make when a tool or header is absent.
set -euo pipefail

PKGS=(
  make gcc g++ clang llvm            # build; clang/llvm-strip for the BPF object; g++ for C++ test targets
  libbpf-dev bpftool                 # libbpf 1.1 + skeleton generator
  libelf-dev libdw-dev               # ELF symbols, build-ids
  liblz4-dev zlib1g-dev              # ZTS0 compression, CRC32
  libjansson-dev                     # manifest.json
  libzydis-dev                       # x86 decoder: moving entry instructions into trampolines
  libcmocka-dev                      # unit tests
  libcbor-dev                        # ZTS0 test decoder (tests only)
  protobuf-compiler                  # Perfetto test decoding (protoc --decode)
  bpftrace                           # independent counts in e2e tests and benches
  python3 python3-yaml               # test helpers (deploy lint parses YAML)
  binutils util-linux procps         # objdump, unshare, pgrep
  jq time                            # e2e tests read JSON; benches read /usr/bin/time -v
  libsqlite3-dev sqlite3 zstd        # real third-party programs traced by e2e tests
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

# The wtf-trace reference loader (tests only), pinned; installed under .output/ so it never touches the system.
WTF_VER=2015.7.15-1
here=$(cd "$(dirname "$0")/.." && pwd)
wtf_dir="$here/.output/npm"
if [ "${ATFTRACE_SKIP_NPM:-0}" != 1 ] && [ ! -f "$wtf_dir/node_modules/tracing-framework/bin/dump.js" ]; then
  mkdir -p "$wtf_dir"
  (cd "$wtf_dir" && npm install --silent --no-audit --no-fund --ignore-scripts "tracing-framework@$WTF_VER" >/dev/null 2>&1) \
    || { echo "deps.sh: npm install tracing-framework@$WTF_VER failed" >&2; exit 1; }
fi
exit 0
