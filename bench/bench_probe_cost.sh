#!/usr/bin/env bash
# Probe cost and attach time (figures only; nothing here asserts a time).
# (1) ns per traced call (entry + return) of one hot function, per first-instruction kind
#     (tests/targets/probe_sites.c): no probes; empty BPF programs attached exactly like
#     atftrace's (bpf/empty.bpf.c); atftrace's programs with the ring drained; atftrace record;
#     bpftrace uprobe+uretprobe counting. Each figure is the best of $REPEAT runs of $N calls
#     (the best is the least disturbed by other load on the machine).
# (2) BPF run time per program run (the kernel's bpf_stats, on only during these runs): the
#     programs' own cost without the uprobe machinery around them, steadier under load than (1).
# (3) attach + detach time of one link for 1, 1000 and 10000 functions of a generated target.
#   bench/bench_probe_cost.sh            (via make bench; needs root)
#   PROBE_BENCH_N=200000 PROBE_BENCH_REPEAT=3 PROBE_BENCH_KINDS="session multi"
set -u
cd "$(dirname "$0")/.."
source bench/lib.sh
SITES=$PWD/${OUTPUT:-.output}/targets/probe_sites
N=${PROBE_BENCH_N:-200000}
REPEAT=${PROBE_BENCH_REPEAT:-3}
KINDS=${PROBE_BENCH_KINDS:-session multi}
bench_probe_setup bench_probe_cost "$SITES"
# Runs under SCHED_FIFO (chrt -f 50) when it can: on a shared machine, preemption by other work
# otherwise dominates the wall figures (an empty program measured 1450 ns a call instead of 770).
FIFO=()
chrt -f 50 true 2>/dev/null && FIFO=(chrt -f 50)
# (run_record and run_bpftrace, shell functions, put their own target under it)
ns_per_call() {
	if [ "$(type -t "$1")" = function ]; then "$@"; else "${FIFO[@]}" "$@"; fi 2>/dev/null |
		awk -v n="$N" '$2 == n { print $3 }' | tail -n 1
}
best() { bench_lowest "$REPEAT" ns_per_call "$@"; }   # lowest ns/call the target reported

run_record() {   # site
	rm -rf "$tmp/rec"
	"${FIFO[@]}" "$ATF" record --no-trampolines -o "$tmp/rec" -f "site_$1" -- "$SITES" "$1" "$N"
}

bpftrace_pid=""
run_bpftrace() {   # site: system-wide bpftrace counting, started and attached before the target
	local log=$tmp/bt.log
	bpftrace -e "uprobe:$SITES:site_$1 { @c = count(); } uretprobe:$SITES:site_$1 { @r = count(); }" \
		>"$log" 2>&1 &
	bpftrace_pid=$!
	# bpftrace's "Attaching" line is block-buffered into a file: instead, wait until the kernel
	# lists its two uprobe perf events.
	while [ "$(bpftool perf list 2>/dev/null | grep -cE "^pid $bpftrace_pid .*u(ret)?probe")" -lt 2 ]; do
		kill -0 "$bpftrace_pid" 2>/dev/null || return 1
		sleep 0.05
	done
	"${FIFO[@]}" "$SITES" "$1" "$N"
	kill -INT "$bpftrace_pid"; wait "$bpftrace_pid" 2>/dev/null
}

ratio() { bench_ratio "$@"; }

have_bpftrace=0
if command -v bpftrace >/dev/null; then
	[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	have_bpftrace=1
fi

echo "probe cost, ns per traced call (entry + return), best of $REPEAT x $N calls${FIFO:+, SCHED_FIFO}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %7s' site none
for k in $KINDS; do printf ' %13s %13s %7s' "empty-$k" "atftrace-$k" ratio; done
printf ' %9s %9s %10s %12s\n' record bpftrace rec/empty atf/bpftrace
for site in nop5 push endbr lea; do
	n=$N
	none=$(best "$PB" cost none session "site_$site" "$SITES" "$site" "$n")
	printf '%-6s %7s' "$site" "$none"
	first_empty="" first_atf=""
	for k in $KINDS; do
		e=$(best "$PB" cost empty "$k" "site_$site" "$SITES" "$site" "$n")
		a=$(best "$PB" cost atftrace "$k" "site_$site" "$SITES" "$site" "$n")
		[ -n "$first_empty" ] || { first_empty=$e; first_atf=$a; }
		printf ' %13s %13s %7s' "$e" "$a" "$(ratio "$a" "$e")"
	done
	rec=$(best run_record "$site")
	bt=n/a
	[ $have_bpftrace = 1 ] && bt=$(best run_bpftrace "$site")
	printf ' %9s %9s %10s %12s\n' "$rec" "$bt" "$(ratio "$rec" "$first_empty")" "$(ratio "$first_atf" "$bt")"
done
echo "(ratio = atftrace/empty for that link kind; rec/empty and atf/bpftrace use the first kind: ${KINDS%% *};"
echo " bpftrace probes endbr64 functions at +0, single-stepping the endbr64; atftrace hops it)"

# ---- BPF run time per program run ------------------------------------------------------------
ns_per_run() {   # prog mode kind site: the lowest ns_per_run bpf_stats gave PROG
	local prog=$1
	shift
	PROBE_BENCH_STATS=1 "$PB" cost "$1" "$2" "site_$3" "$SITES" "$3" "$N" 2>&1 >/dev/null |
		awk -v p="$prog" '$1 == "bpf_stats" && $2 == p { sub("ns_per_run=", "", $4); print $4 }'
}
echo "BPF run time, ns per program run (bpf_stats), session link, lowest of $REPEAT x $N calls"
printf '%-6s %9s %9s %14s\n' site empty atftrace "added/call"
for site in nop5 push; do
	e=$(bench_lowest "$REPEAT" ns_per_run empty_session empty session "$site")
	a=$(bench_lowest "$REPEAT" ns_per_run atf_session atftrace session "$site")
	printf '%-6s %9s %9s %14s\n' "$site" "$e" "$a" \
		"$(awk -v a="$a" -v e="$e" 'BEGIN { if (a + 0 > 0 && e + 0 > 0) printf "%.1f", 2 * (a - e); else printf "n/a" }')"
done
echo "(added/call: entry + return runs, atftrace's programs minus the empty ones)"

# ---- attach + detach time ------------------------------------------------------------------
gen=$tmp/many.c
awk 'BEGIN { for (i = 0; i < 10000; i++) printf "int f_%04d(int x) { return x * %d + 1; }\n", i, i + 3;
	     print "int main(void) { return f_0000(1) == 4 ? 0 : 1; }" }' >"$gen"
if ! gcc -O1 -fno-inline -fcf-protection=none "$gen" -o "$tmp/many" 2>"$tmp/cc.log"; then
	echo "attach bench: cannot build the 10000-function target"; cat "$tmp/cc.log"; exit 1
fi
echo "attach + detach of one link (generated target with 10000 functions)"
for k in $KINDS; do
	for glob in 'f_0000' 'f_0???' 'f_*'; do
		printf '  %-8s %s\n' "$k" "$("$PB" attach "$k" "$tmp/many" "$glob" 2>&1 | tail -n 1)"
	done
done
printf '  %-8s %s\n' perf "$("$PB" attach perf "$tmp/many" f_0000 2>&1 | tail -n 1)"
printf '  %-8s %s\n' perf "$("$PB" attach perf "$tmp/many" 'f_000?' 2>&1 | tail -n 1)"
