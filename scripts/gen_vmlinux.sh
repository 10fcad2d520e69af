#!/usr/bin/env bash
# Regenerate the checked-in vmlinux/<arch>/vmlinux.h from a kernel's BTF.
# The build never runs this: CO-RE relocations make the checked-in header valid for other kernels.
#   scripts/gen_vmlinux.sh [BTF_FILE] [ARCH]     (defaults: /sys/kernel/btf/vmlinux, host arch)
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
arch=${2:-$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')}
out="$(cd "$(dirname "$0")/.." && pwd)/vmlinux/$arch/vmlinux.h"
mkdir -p "$(dirname "$out")"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(wc -l < "$out") lines)"
