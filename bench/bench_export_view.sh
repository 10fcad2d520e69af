#!/usr/bin/env bash
# Export throughput of the viewer formats (dial9, Perfetto, Chrome JSON) on a synthetic
# 10M-event session: events/s of wall time and per CPU second (user + sys, the "per core"
# figure), peak RSS from /usr/bin/time -v, peak anonymous memory (RssAnon, sampled in a second
# run: RSS also counts the mapped input files, which are page cache), and output bytes per
# event. Figures only; nothing here asserts a time.
#   bench/bench_export_view.sh [EVENTS]   (default 10000000; BENCH_TMP picks the scratch dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bench_setup bench_export_view
EVENTS=${1:-10000000}

n=$(bench_session "$TMP/s" "$EVENTS")
in_bytes=$(du -cb "$TMP"/s/pid_4242/thread_*/index.atf | tail -n 1 | cut -f1)
echo "session: $n events in 4 threads, $((in_bytes / 1048576)) MiB of index files"
bench_header

for fmt in dial9 perfetto chrome; do
	out=$TMP/out.$fmt
	bench_time "$ATF" export "$TMP/s" -F "$fmt" -o "$out" --force
	size=$(stat -c %s "$out")
	anon=$(peak_anon_kib "$ATF" export "$TMP/s" -F "$fmt" -o "$out" --force)
	bench_row "$fmt" "$n" "$anon" "$size"
	rm -f "$out"
done
