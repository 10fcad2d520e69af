#!/usr/bin/env bash
# Export throughput of the container formats on a synthetic 10M-event session: RTC (default
# 1 MiB / 128 KiB geometry) and ZTS0 with each compression (lz4, zlib, none). Prints events/s
# of wall time and per CPU second (user + sys), peak RSS from /usr/bin/time -v, peak anonymous
# memory (RssAnon sampled in a second run; RSS also counts the mapped input files, which are
# page cache), and output bytes per event. Figures only; nothing here asserts a time.
#   bench/bench_export_containers.sh [EVENTS]   (default 10000000; BENCH_TMP picks the scratch dir)
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
ATF=$PWD/$OUTPUT/atftrace
GEN=$PWD/$OUTPUT/tools/gen_session
EVENTS=${1:-10000000}
for f in "$ATF" "$GEN" /usr/bin/time; do
	[ -x "$f" ] || { echo "bench_export_containers: $f: missing (make OUTPUT=$OUTPUT all tools)" >&2; exit 1; }
done
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/atftrace-bench-containers.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

mkdir -p "$TMP/s"
"$GEN" -o "$TMP/s/pid_4242" --threads 4 --events "$EVENTS" --detail --detail-every 64 --seed 1 >/dev/null
n=$(jq '[.threads[].index_events] | add' "$TMP/s/pid_4242/manifest.json")
in_bytes=$(du -cb "$TMP"/s/pid_4242/thread_*/*.atf | tail -n 1 | cut -f1)
cat "$TMP"/s/pid_4242/thread_*/*.atf >/dev/null          # warm the page cache for every run alike
echo "session: $n events in 4 threads (detail every 64th), $((in_bytes / 1048576)) MiB of ATF files"
printf '%-9s %10s %8s %8s %14s %14s %8s %9s %9s\n' format events wall_s cpu_s "events/s" "events/cpu_s" \
	"rss_MiB" "anon_MiB" "bytes/ev"

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

# run LABEL OUT EXPORT-ARGS...: one timed export, one sampled export, one line of figures.
run() {
	local label=$1 out=$2 wall cpu rss size anon
	shift 2
	rm -rf "$out"
	/usr/bin/time -v "$ATF" export "$TMP/s" -o "$out" "$@" 2>"$TMP/time.$label" >/dev/null \
		|| { sed 's/^/  | /' "$TMP/time.$label" >&2; exit 1; }
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {
		n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$TMP/time.$label")
	cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$TMP/time.$label")
	rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time.$label")
	size=$(du -sb "$out" | cut -f1)
	rm -rf "$out"
	anon=$(peak_anon_kib "$ATF" export "$TMP/s" -o "$out" "$@")
	rm -rf "$out"
	awk -v f="$label" -v n="$n" -v w="$wall" -v c="$cpu" -v r="$rss" -v a="$anon" -v b="$size" 'BEGIN {
		printf "%-9s %10d %8.2f %8.2f %14.0f %14.0f %8.1f %9.1f %9.2f\n", f, n, w, c,
			(w > 0 ? n / w : 0), (c > 0 ? n / c : 0), r / 1024, a / 1024, b / n }'
}

run rtc "$TMP/out.rtc" -F rtc
for c in lz4 zlib none; do
	run "zts-$c" "$TMP/out.zts-$c" -F zts --compress "$c"
done
