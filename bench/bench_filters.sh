#!/usr/bin/env bash
# Record-time filters (record -t, -D): what they save on sqlite3 with every libsqlite3 function
# traced. The workload: 20,000 single-row INSERTs in one transaction, then queries. Per run: the
# session's size on disk, the index events, the ring bytes they took (events travel 16 to a
# REC_EVENT_BATCH record of 16 + 16 x 24 bytes plus the ring's 8-byte header: 25.5 bytes an
# event), the calls filtered, sqlite3's own run time (.timer) and the
# recorder's wall time, for no filter, -t 10us and -D 3. Figures only; nothing asserts a time.
#   bench/bench_filters.sh      FILTER_BENCH_ROWS=20000 FILTER_BENCH_RING=64M
set -u
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
ATF=$PWD/$OUTPUT/atftrace
ROWS=${FILTER_BENCH_ROWS:-20000}
RING=${FILTER_BENCH_RING:-64M}     # large enough that no run loses events on a busy host
SQLITE=$(command -v sqlite3 || true)
[ -x "$ATF" ] || { echo "bench_filters: $ATF missing (make)" >&2; exit 1; }
[ -n "$SQLITE" ] || { echo "bench_filters: sqlite3 missing: skipped"; exit 0; }
tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/atftrace-bench_filters.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
{
	echo ".timer on"
	echo "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);"
	echo "BEGIN;"
	for ((i = 1; i <= ROWS; i++)); do echo "INSERT INTO t(b) VALUES('row $i');"; done
	echo "COMMIT;"
	echo "SELECT count(*), sum(length(b)) FROM t;"
	echo "SELECT b FROM t WHERE a % 1000 = 0;"
} >"$tmp/q.sql"
runtime() { awk '/^Run Time: real/ { s += $4 } END { printf "%.3f", s }' "$1"; }
"$SQLITE" -batch -init "$tmp/q.sql" :memory: .quit </dev/null >"$tmp/sq.out" 2>/dev/null
untraced=$(runtime "$tmp/sq.out")
echo "sqlite3, $ROWS single-row INSERTs in one transaction + queries, every libsqlite3 function traced"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); untraced run time $untraced s"
printf '%-10s %10s %12s %12s %12s %9s %9s %9s\n' filter session events ring_bytes filtered lost run_s wall_s
for f in none "-t 10us" "-D 3"; do
	opts=()
	[ "$f" = none ] || read -ra opts <<<"$f"
	rm -rf "$tmp/rec"
	/usr/bin/time -f '%e' -o "$tmp/wall" "$ATF" record "${opts[@]}" --ring-size "$RING" -o "$tmp/rec" \
		-f 'libsqlite3.so.0:*' -- "$SQLITE" -batch -init "$tmp/q.sql" :memory: .quit \
		</dev/null >"$tmp/sq.out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	ev=$(sed -n 's/.*record: \([0-9]*\) events (.*/\1/p' "$tmp/err" | head -1)
	filtered=$(jq '[.filtered_depth, .filtered_time, .filtered_function, .filtered_trace_off] | map(. // 0) | add' \
		"$tmp"/rec/pid_*/manifest.json)
	lost=$(sed -n 's/.*record: [0-9]* events (.*, \([0-9]*\) lost,.*/\1/p' "$tmp/err" | head -1)
	printf '%-10s %10s %12s %12s %12s %9s %9s %9s\n' "$f" "$(du -sh "$tmp/rec" | cut -f1)" "$ev" \
		"$((ev * 408 / 16))" "$filtered" "$lost" "$(runtime "$tmp/sq.out")" "$(cat "$tmp/wall")"
done
