#!/usr/bin/env bash
# Export throughput of the container formats on a synthetic 10M-event session: RTC (default
# 1 MiB / 128 KiB geometry) and ZTS0 with each compression (lz4, zlib, none). Prints events/s
# of wall time and per CPU second (user + sys), peak RSS from /usr/bin/time -v, peak anonymous
# memory (RssAnon sampled in a second run; RSS also counts the mapped input files, which are
# page cache), and output bytes per event. Figures only; nothing here asserts a time.
#   bench/bench_export_containers.sh [EVENTS]   (default 10000000; BENCH_TMP picks the scratch dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_setup bench_export_containers
EVENTS=${1:-10000000}

n=$(bench_session "$TMP/s" "$EVENTS" --detail --detail-every 64)
in_bytes=$(du -cb "$TMP"/s/pid_4242/thread_*/*.atf | tail -n 1 | cut -f1)
echo "session: $n events in 4 threads (detail every 64th), $((in_bytes / 1048576)) MiB of ATF files"
bench_header

# run LABEL OUT EXPORT-ARGS...: one timed export, one sampled export, one line of figures.
run() {
	local label=$1 out=$2 size anon
	shift 2
	rm -rf "$out"
	bench_time "$ATF" export "$TMP/s" -o "$out" --force "$@"
	size=$(du -sb "$out" | cut -f1)
	rm -rf "$out"
	anon=$(peak_anon_kib "$ATF" export "$TMP/s" -o "$out" --force "$@")
	rm -rf "$out"
	bench_row "$label" "$n" "$anon" "$size"
}

run rtc "$TMP/out.rtc" -F rtc
for c in lz4 zlib none; do
	run "zts-$c" "$TMP/out.zts-$c" -F zts --compress "$c"
done
