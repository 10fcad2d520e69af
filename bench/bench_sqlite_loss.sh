#!/usr/bin/env bash
# Loss at the default settings on a real workload, with the CPUs contended: sqlite3 with every
# libsqlite3 function traced (default ring, default mode: call sites), 20,000 single-row INSERTs
# in one transaction plus queries, while one CPU-bound process per run competes for the two
# cores. Prints each run's events, lost events and sqlite3's run time; loss must be 0 in every run.
set -u
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
ATF=$PWD/$OUTPUT/atftrace
ROWS=${LOSS_BENCH_ROWS:-20000}
RUNS=${LOSS_BENCH_RUNS:-5}
SQLITE=$(command -v sqlite3 || true)
[ -x "$ATF" ] || { echo "bench_sqlite_loss: $ATF missing (make)" >&2; exit 1; }
[ -n "$SQLITE" ] || { echo "bench_sqlite_loss: sqlite3 missing: skipped"; exit 0; }
tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/atftrace-bench_loss.XXXXXX")
hog=
trap '[ -n "$hog" ] && kill $hog 2>/dev/null; rm -rf "$tmp"' EXIT
{
	echo ".timer on"
	echo "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);"
	echo "BEGIN;"
	for ((i = 1; i <= ROWS; i++)); do echo "INSERT INTO t(b) VALUES('row $i');"; done
	echo "COMMIT;"
	echo "SELECT count(*), sum(length(b)) FROM t;"
} >"$tmp/q.sql"
echo "sqlite3, $ROWS single-row INSERTs in one transaction + a query, every libsqlite3 function"
echo "traced, default ring, a CPU-bound process running beside it; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %12s %10s %10s\n' run events lost 'sqlite3 s'
fail=0
for r in $(seq "$RUNS"); do
	bash -c 'while :; do :; done' &
	hog=$!
	"$ATF" record -o "$tmp/s$r" -f 'libsqlite3.so.0:*' -- "$SQLITE" -batch -init "$tmp/q.sql" \
		:memory: .quit </dev/null >"$tmp/out$r" 2>"$tmp/err$r"
	rc=$?
	kill $hog 2>/dev/null
	wait $hog 2>/dev/null
	hog=
	line=$(grep -E '^atftrace record: [0-9]+ events' "$tmp/err$r" | tail -1)
	events=$(echo "$line" | sed -E 's/^atftrace record: ([0-9]+) events.*/\1/')
	lost=$(echo "$line" | sed -E 's/.* ([0-9]+) lost,.*/\1/')
	secs=$(awk '/^Run Time: real/ { s += $4 } END { printf "%.2f", s }' "$tmp/out$r")
	printf '%-4s %12s %10s %10s\n' "$r" "${events:-?}" "${lost:-?}" "$secs"
	[ $rc = 0 ] && [ "${lost:-x}" = 0 ] || fail=1
	rm -rf "$tmp/s$r"
done
[ $fail = 0 ] && echo "0 lost in each of $RUNS runs" || echo "some run lost events or failed (see above)"
