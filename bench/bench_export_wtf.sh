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
OUTPUT=${OUTPUT:-.output}
ATF=$PWD/$OUTPUT/atftrace
GEN=$PWD/$OUTPUT/tools/gen_session
EVENTS=${1:-10000000}
for f in "$ATF" "$GEN" /usr/bin/time; do
	[ -x "$f" ] || { echo "bench_export_wtf: $f: missing (make OUTPUT=$OUTPUT all tools)" >&2; exit 1; }
done
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/atftrace-bench-wtf.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# peak_anon_kib CMD...: run CMD, sampling its RssAnon every 10 ms; prints the peak in KiB.
peak_anon_kib() {
	local pid peak=0 kib
	"$@" >/dev/null 2>&1 &
	pid=$!
	while kib=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) && [ -n "$kib" ]; do
		[ "$kib" -gt "$peak" ] && peak=$kib
		sleep 0.01
	done
	wait "$pid"
	echo "$peak"
}

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
	local label=$1 s=$2 n=$3 fmt=$4 out=$TMP/out wall cpu rss anon size nch=-
	shift 4
	/usr/bin/time -v "$ATF" export "$s" -F "$fmt" "$@" -o "$out" 2>"$TMP/time" >/dev/null \
		|| { sed 's/^/  | /' "$TMP/time" >&2; exit 1; }
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {
		n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$TMP/time")
	cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$TMP/time")
	rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time")
	size=$(stat -c %s "$out")
	[ "$fmt" = wtf ] && nch=$(chunks "$out")
	[ "$fmt" = wtf-json ] && nch=$(($(grep -c '"event_data"' "$out" || true)))
	anon=$(peak_anon_kib "$ATF" export "$s" -F "$fmt" "$@" -o "$out")
	awk -v f="$label" -v n="$n" -v w="$wall" -v c="$cpu" -v r="$rss" -v a="$anon" -v b="$size" -v k="$nch" 'BEGIN {
		printf "%-22s %10d %8.2f %8.2f %12.0f %12.0f %8.1f %9.1f %9.2f %7s\n", f, n, w, c,
			(w > 0 ? n / w : 0), (c > 0 ? n / c : 0), r / 1024, a / 1024, b / n, k }'
	rm -f "$out"
}

header() {
	printf '%-22s %10s %8s %8s %12s %12s %8s %9s %9s %7s\n' format events wall_s cpu_s "events/s" \
		"events/cpu_s" rss_MiB anon_MiB bytes/ev chunks
}

session() {   # DIR EVENTS [gen options]: prints the event count
	local d=$1 ev=$2
	shift 2
	mkdir -p "$d"
	"$GEN" -o "$d/pid_4242" --threads 4 --events "$ev" --seed 1 "$@" >/dev/null
	cat "$d"/pid_4242/thread_*/*.atf >/dev/null      # warm the page cache for every run alike
	jq '[.threads[].index_events] | add' "$d/pid_4242/manifest.json"
}

n=$(session "$TMP/s" "$EVENTS")
echo "session: $n events in 4 threads, no detail"
header
run wtf "$TMP/s" "$n" wtf
run "wtf (64K chunks)" "$TMP/s" "$n" wtf --chunk-size 64K
run wtf-json "$TMP/s" "$n" wtf-json
run "wtf-json partial" "$TMP/s" "$n" wtf-json --json-mode partial
rm -rf "$TMP/s"

nd=$((EVENTS / 5))
n=$(session "$TMP/d" "$nd" --detail --detail-every 4 --stack-bytes 64)
echo "session: $n events in 4 threads, detail (64 stack bytes) on every 4th event"
header
run "wtf +detail" "$TMP/d" "$n" wtf
run "wtf-json +detail" "$TMP/d" "$n" wtf-json
