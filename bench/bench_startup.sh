#!/usr/bin/env bash
# Start-up to "probes attached" (figures only; nothing here asserts a time): from just before the
# recorder is executed to the moment it opens its --ready-file FIFO, which it does once every
# probe (and, by default, every call site redirected) is in place. Median and range of $RUNS runs,
# for 1 and for 1000 functions of a generated target, with the target launched by the recorder
# (record -- CMD) and already running (record -p PID), with the default (call sites) and with
# --no-trampolines.
#   bench/bench_startup.sh                (via make bench; needs root)
#   STARTUP_RUNS=11 bench/bench_startup.sh
set -u
cd "$(dirname "$0")/.."
source bench/lib.sh
RUNS=${STARTUP_RUNS:-7}
bench_probe_setup bench_startup

# 1000 functions whose first instruction the kernel would single-step (as most -O1 code without
# endbr64 starts); main calls one of them once, then waits
# on its stdin when asked to (the -p runs), or exits.
gen=$tmp/many.c
awk 'BEGIN { for (i = 0; i < 1000; i++) printf "int f_%04d(int x) { return x * %d + 1; }\n", i, i + 3;
	     print "#include <unistd.h>";
	     print "int main(int argc, char **argv) { char c; int r = f_0000(1) == 4 ? 0 : 1;";
	     print "  if (argc > 1) while (read(0, &c, 1) > 0) {} return r; }" }' >"$gen"
if ! gcc -O1 -fno-inline -fcf-protection=none "$gen" -o "$tmp/many" 2>"$tmp/cc.log"; then
	echo "bench_startup: cannot build the 1000-function target"; cat "$tmp/cc.log"; exit 1
fi
mkfifo "$tmp/ready"

# startup_ms GLOB MODE [record options]: one run; prints the milliseconds to the ready FIFO.
startup_ms() {
	local glob=$1 mode=$2 t0 t1 rec hold target="" rc=0
	shift 2
	rm -rf "$tmp/s"
	if [ "$mode" = pid ]; then
		# a target that waits on a pipe we hold open, so it is alive until we close it
		exec {hold}> >("$tmp/many" wait)
		target=$!
		# wait until the target is its own program (not the shell that execs it)
		while [ "$(readlink "/proc/$target/exe" 2>/dev/null)" != "$tmp/many" ]; do sleep 0.01; done
		t0=$EPOCHREALTIME
		"$ATF" record -o "$tmp/s" --ready-file "$tmp/ready" -f "$glob" "$@" -p "$target" \
			>/dev/null 2>"$tmp/err" &
	else
		t0=$EPOCHREALTIME
		"$ATF" record -o "$tmp/s" --ready-file "$tmp/ready" -f "$glob" "$@" -- "$tmp/many" \
			>/dev/null 2>"$tmp/err" &
	fi
	rec=$!
	# the FIFO opens when the recorder is ready; a recorder that fails closes nothing: time out
	if timeout 30 cat "$tmp/ready" >/dev/null; then
		t1=$EPOCHREALTIME
	else
		rc=1
	fi
	[ "$mode" = pid ] && kill -INT "$rec" 2>/dev/null
	wait "$rec" || rc=1
	if [ -n "$target" ]; then
		exec {hold}>&-
		wait "$target" 2>/dev/null
	fi
	if [ $rc != 0 ]; then
		sed 's/^/  | /' "$tmp/err" >&2
		return 1
	fi
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
}

# median_of GLOB MODE [options]: "median (min-max)" of $RUNS runs, or n/a.
median_of() {
	local v all=()
	for _ in $(seq "$RUNS"); do
		v=$(startup_ms "$@") || { echo n/a; return; }
		all+=("$v")
	done
	printf '%s\n' "${all[@]}" | sort -n | awk '{ v[NR] = $1 } END {
		printf "%.1f (%.1f-%.1f)", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR] }'
}

echo "start-up to probes attached (recorder exec -> --ready-file opened), ms, median (min-max) of $RUNS runs;" \
	"load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-16s %22s %22s\n' target functions default --no-trampolines
for mode in launched pid; do
	for glob in f_0000 'f_*'; do
		n=1; [ "$glob" = f_0000 ] || n=1000
		printf '%-10s %-16s %22s %22s\n' "$mode" "$n" "$(median_of "$glob" "$mode")" \
			"$(median_of "$glob" "$mode" --no-trampolines)"
	done
done
