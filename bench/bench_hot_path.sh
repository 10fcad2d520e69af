#!/usr/bin/env bash
# The BPF hot path against its floor (figures only; nothing here asserts a time). Per site (nop5,
# push), interleaved rounds of one run each of: empty session programs; the floor programs of
# bpf/empty.bpf.c (clock: the clock read alone; storage: current task + its task storage; floor:
# the three calls of today's hot path; percpu: a per-CPU slot owned by ctx, and the clock); and
# atftrace's programs (ring drained). Each run gives the wall ns per traced call (entry + return,
# under SCHED_FIFO when possible) and the kernel's bpf_stats ns per program run; the medians of
# $ROUNDS rounds are printed, with wall ÷ empty. Interleaving puts every variant under the same
# load of a shared host.
#   bench/bench_hot_path.sh                  (via make bench; needs root)
#   HOT_PATH_ROUNDS=9 HOT_PATH_N=200000
#   HOT_PATH_BASE=/path/to/an/older/probe_bench   adds its atftrace programs as "base" (A/B)
set -u
cd "$(dirname "$0")/.."
source bench/lib.sh
SITES=$PWD/${OUTPUT:-.output}/targets/probe_sites
N=${HOT_PATH_N:-200000}
ROUNDS=${HOT_PATH_ROUNDS:-5}
BASE=${HOT_PATH_BASE:-}
bench_probe_setup bench_hot_path "$SITES"
FIFO=()
chrt -f 50 true 2>/dev/null && FIFO=(chrt -f 50)
MODES="empty clock storage floor percpu atftrace"
[ -n "$BASE" ] && MODES="$MODES base"

one_run() {   # mode site: "WALL NS_PER_RUN" of one run, appended to $tmp/MODE.SITE
	local pb=$PB mode=$1 prog
	[ "$mode" = base ] && { pb=$BASE; mode=atftrace; }
	prog=${mode}_session
	[ "$mode" = atftrace ] && prog=atf_session
	PROBE_BENCH_STATS=1 "${FIFO[@]}" "$pb" cost "$mode" session "site_$2" "$SITES" "$2" "$N" 2>&1 |
		awk -v n="$N" -v p="$prog" '$2 == n { w = $3 }
			$1 == "bpf_stats" && $2 == p { sub("ns_per_run=", "", $4); r = $4 }
			END { if (w != "" && r != "") print w, r }' >>"$tmp/$1.$2"
}

median() {   # column file
	sort -n -k"$1" "$2" | awk -v c="$1" '{ v[NR] = $c } END {
		if (!NR) { printf "n/a"; exit }
		if (NR % 2) printf "%.1f", v[(NR + 1) / 2]; else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "hot path against its floor, session link, medians of $ROUNDS interleaved rounds x $N calls${FIFO:+, SCHED_FIFO}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for site in nop5 push; do
	for _ in $(seq "$ROUNDS"); do
		for m in $MODES; do one_run "$m" "$site"; done
	done
	ew=$(median 1 "$tmp/empty.$site")
	er=$(median 2 "$tmp/empty.$site")
	printf '%-6s %-9s %9s %9s %11s %10s\n' site programs "wall ns" "÷ empty" "ns per run" "added/call"
	for m in $MODES; do
		w=$(median 1 "$tmp/$m.$site")
		r=$(median 2 "$tmp/$m.$site")
		printf '%-6s %-9s %9s %9s %11s %10s\n' "$site" "$m" "$w" "$(bench_ratio "$w" "$ew")" "$r" \
			"$(awk -v a="$r" -v e="$er" 'BEGIN { if (a + 0 > 0 && e + 0 > 0) printf "%.1f", 2 * (a - e); else printf "n/a" }')"
	done
done
echo "(wall: ns per traced call, entry + return; ns per run: bpf_stats of the session program;"
echo " added/call: 2 x (ns per run - empty's), both runs of a call)"
