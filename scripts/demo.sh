#!/usr/bin/env bash
# make demo: trace the bundled sample (tests/targets/demo.c) and write every export.
# Needs root and a kernel with BTF for the recording; without them it says so and demonstrates
# the rest on a synthetic session (tests/tools/gen_session) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
ATF=$OUTPUT/atftrace
out=${DEMO_DIR:-demo-out}
rm -rf "$out" && mkdir -p "$out"

if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	echo "== recording $OUTPUT/targets/demo"
	"$ATF" record -o "$out/session" -- "$OUTPUT/targets/demo"
else
	echo "== not root or no BTF: using a synthetic session instead of a recording"
	mkdir -p "$out/session"
	"$OUTPUT/tools/gen_session" -o "$out/session/pid_1" --threads 2 --calls 20 --depth 5 --detail
fi
echo "== info";   "$ATF" info "$out/session"
echo "== verify"; "$ATF" verify "$out/session"
echo "== dump (first 25 lines)"; "$ATF" dump "$out/session" | head -n 25 || true
echo "== report"; "$ATF" report "$out/session"
echo "== graph (3 levels)"; "$ATF" graph "$out/session" -D 3
echo "== exports"
"$ATF" export --list | while read -r fmt _; do
	case $fmt in
	zts) dest=$out/export.zts.d ;;
	speedscope) dest=$out/export.speedscope.json ;;
	folded) dest=$out/export.folded ;;
	wtf) dest=$out/export.wtf-trace ;;    # the loader reads the binary form only by this extension
	*)   dest=$out/export.$fmt ;;
	esac
	"$ATF" export "$out/session" -F "$fmt" -o "$dest"
	printf '  %-10s -> %s\n' "$fmt" "$dest"
done
echo "Open $out/export.perfetto in ui.perfetto.dev, $out/export.chrome in chrome://tracing, or"
echo "$out/export.speedscope.json or $out/export.folded in speedscope (Left Heavy is the flame graph);"
echo "$out/export.wtf-trace loads in the Web Tracing Framework."
