#!/usr/bin/env bash
# Export throughput of the wtf-trace formats (-F wtf, -F wtf-json complete and partial) on a
# synthetic 10M-event session (gen_session --events): events/s of wall time and per CPU second,
# peak RSS from /usr/bin/time -v, peak anonymous memory (RssAnon sampled in a second run: RSS also
# counts the mapped input files, which are page cache), output bytes per event and the number of
# event-data chunks. A second, smaller session with detail on every 4th event shows the cost of
# the register instance events. Figures only; nothing here asserts a time.
#   bench/bench_export_wtf.sh [EVENTS]   (default 10000000; BENCH_TMP picks the scratch dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
BENCH_LABEL_W=22 BENCH_RATE_W=12
bench_setup bench_export_wtf
EVENTS=${1:-10000000}

# chunks FILE: event-data chunks in a binary file (walks the chunk headers).
chunks() {
	python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
off, n = 12, 0
while off < len(b):
    cid, ctype, clen = struct.unpack_from('<III', b, off)
    n += ctype == 2
    off += clen
print(n)
PY
}

# run LABEL SESSION N FORMAT [OPTIONS...]
run() {
	local label=$1 s=$2 n=$3 fmt=$4 out=$TMP/out anon size nch=-
	shift 4
	bench_time "$ATF" export "$s" -F "$fmt" "$@" -o "$out" --force
	size=$(stat -c %s "$out")
	[ "$fmt" = wtf ] && nch=$(chunks "$out")
	[ "$fmt" = wtf-json ] && nch=$(($(grep -c '"event_data"' "$out" || true)))
	anon=$(peak_anon_kib "$ATF" export "$s" -F "$fmt" "$@" -o "$out" --force)
	bench_row "$label" "$n" "$anon" "$size" "$nch"
	rm -f "$out"
}

n=$(bench_session "$TMP/s" "$EVENTS")
echo "session: $n events in 4 threads, no detail"
bench_header chunks
run wtf "$TMP/s" "$n" wtf
run "wtf (64K chunks)" "$TMP/s" "$n" wtf --chunk-size 64K
run wtf-json "$TMP/s" "$n" wtf-json
run "wtf-json partial" "$TMP/s" "$n" wtf-json --json-mode partial
rm -rf "$TMP/s"

nd=$((EVENTS / 5))
n=$(bench_session "$TMP/d" "$nd" --detail --detail-every 4 --stack-bytes 64)
echo "session: $n events in 4 threads, detail (64 stack bytes) on every 4th event"
bench_header chunks
run "wtf +detail" "$TMP/d" "$n" wtf
run "wtf-json +detail" "$TMP/d" "$n" wtf-json
