#!/usr/bin/env bash
# Shared by the export benchmarks (bench/bench_export_*.sh): setup, synthetic sessions, timed runs
# and the figures line. Source it after `cd` to the repository root. Figures only: nothing here
# asserts a time.

# bench_setup NAME: sets OUTPUT, ATF, GEN and TMP (a scratch directory under $BENCH_TMP, removed
# on exit); exits when a binary the benchmarks need is missing.
bench_setup() {
	local name=$1 f
	OUTPUT=${OUTPUT:-.output}
	ATF=$PWD/$OUTPUT/atftrace
	GEN=$PWD/$OUTPUT/tools/gen_session
	for f in "$ATF" "$GEN" /usr/bin/time; do
		[ -x "$f" ] || { echo "$name: $f: missing (make OUTPUT=$OUTPUT all tools)" >&2; exit 1; }
	done
	TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/atftrace-$name.XXXXXX")
	trap 'rm -rf "$TMP"' EXIT
}

# bench_session DIR EVENTS [gen_session options]: a 4-thread session in DIR/pid_4242 with its
# files in the page cache (every run starts alike); prints its event count.
bench_session() {
	local d=$1 ev=$2
	shift 2
	mkdir -p "$d"
	"$GEN" -o "$d/pid_4242" --threads 4 --events "$ev" --seed 1 "$@" >/dev/null
	cat "$d"/pid_4242/thread_*/*.atf >/dev/null
	jq '[.threads[].index_events] | add' "$d/pid_4242/manifest.json"
}

# peak_anon_kib CMD...: run CMD, sampling its RssAnon every 10 ms; prints the peak in KiB.
# (RSS also counts mapped input files, which are page cache; RssAnon is the exporter's own memory.)
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

# bench_time CMD...: run CMD under /usr/bin/time -v; sets WALL (s), CPU (user + sys s) and
# RSS_KIB (peak RSS). A failing CMD prints its output and exits.
bench_time() {
	local log=$TMP/time.log
	/usr/bin/time -v "$@" 2>"$log" >/dev/null || { sed 's/^/  | /' "$log" >&2; exit 1; }
	WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {
		n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$log")
	CPU=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$log")
	RSS_KIB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log")
}

# Column widths of the figures table: the label, and the two rates.
BENCH_LABEL_W=${BENCH_LABEL_W:-9}
BENCH_RATE_W=${BENCH_RATE_W:-14}

# bench_header [EXTRA]: the column titles, with an optional last column EXTRA.
bench_header() {
	printf "%-${BENCH_LABEL_W}s %10s %8s %8s %${BENCH_RATE_W}s %${BENCH_RATE_W}s %8s %9s %9s" format events \
		wall_s cpu_s "events/s" "events/cpu_s" rss_MiB anon_MiB bytes/ev
	[ $# -gt 0 ] && printf ' %7s' "$1"
	printf '\n'
}

# bench_row LABEL EVENTS ANON_KIB BYTES [EXTRA]: one line of figures from the last bench_time.
bench_row() {
	awk -v f="$1" -v n="$2" -v w="$WALL" -v c="$CPU" -v r="$RSS_KIB" -v a="$3" -v b="$4" \
	    -v lw="$BENCH_LABEL_W" -v rw="$BENCH_RATE_W" -v k="${5-}" -v has_k=$(($# > 4)) 'BEGIN {
		printf "%-" lw "s %10d %8.2f %8.2f %" rw ".0f %" rw ".0f %8.1f %9.1f %9.2f", f, n, w, c,
			(w > 0 ? n / w : 0), (c > 0 ? n / c : 0), r / 1024, a / 1024, b / n
		if (has_k) printf " %7s", k
		printf "\n" }'
}

# bench_lowest REPEAT CMD...: run CMD (which prints one figure) REPEAT times; print the lowest,
# the run least disturbed by other load on the machine, or n/a when no run gave a figure.
bench_lowest() {
	local repeat=$1 b="" v
	shift
	for _ in $(seq "$repeat"); do
		v=$("$@")
		[ -n "$v" ] || continue
		if [ -z "$b" ] || awk -v a="$v" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$v; fi
	done
	echo "${b:-n/a}"
}

# bench_ratio A B: A / B with two decimals, or n/a when either is not a positive number.
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'; }

# bench_probe_setup NAME FILE...: for the benchmarks that trace (root, or a skip with exit 0):
# sets OUTPUT, OUT, ATF and PB (bench/probe_bench) and a scratch directory $tmp removed on exit;
# exits when $ATF, $PB or one of FILE... is missing.
bench_probe_setup() {
	local name=$1 f
	shift
	OUTPUT=${OUTPUT:-.output}
	OUT=$PWD/$OUTPUT
	ATF=${ATFTRACE_BIN:-$OUT/atftrace}
	PB=$OUT/bench/probe_bench
	[ "$(id -u)" = 0 ] || { echo "$name: needs root (skipped)"; exit 0; }
	for f in "$PB" "$ATF" "$@"; do
		[ -x "$f" ] || { echo "$name: $f missing: make OUTPUT=$OUTPUT bench"; exit 1; }
	done
	tmp=$(mktemp -d /tmp/atftrace-bench.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
}
