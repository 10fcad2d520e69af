#!/usr/bin/env bash
# Cost of a C++ throw + catch (figures only; nothing here asserts a time). tests/targets/cxx_throw
# times N throws from main through thrower_a -> thrower_b -> thrower_c and prints ns per throw:
#   untraced                   no probes
#   only main traced           no traced frame is crossed, but main's pending uretprobe makes the
#                              raise and the catch each hold the thread once (SIGSTOP, the recorder
#                              writes the stack, SIGCONT: user/record/recorder_unwind.c)
#   thrower_c traced           one hold at the raise; nothing traced outlives the catch
#   main + 3 frames traced     a hold at the raise and one at the catch (re-arming main)
#   untraced, another records  the hooks see every process but filter by tgid: no hold
# Each figure is the best of $REPEAT runs (the least disturbed by other load).
#   bench/bench_cxx_throw.sh       CXX_BENCH_N=2000 CXX_BENCH_REPEAT=3
set -u
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
OUT=$PWD/$OUTPUT
ATF=${ATFTRACE_BIN:-$OUT/atftrace}
TGT=$OUT/targets/cxx_throw
N=${CXX_BENCH_N:-2000}
REPEAT=${CXX_BENCH_REPEAT:-3}
[ "$(id -u)" = 0 ] || { echo "bench_cxx_throw: needs root (skipped)"; exit 0; }
for f in "$ATF" "$TGT"; do
	[ -x "$f" ] || { echo "bench_cxx_throw: $f missing: make OUTPUT=$OUTPUT all targets"; exit 1; }
done
tmp=$(mktemp -d /tmp/atftrace-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

best() {   # command...: run $REPEAT times, print the lowest ns per throw the target reported
	local b="" v
	for _ in $(seq "$REPEAT"); do
		rm -rf "$tmp/rec"
		v=$(CXX_THROW_NS=1 "$@" 2>&1 >/dev/null | awk '$1 == "ns_per_throw" { print $2 }')
		[ -n "$v" ] || continue
		if [ -z "$b" ] || [ "$v" -lt "$b" ]; then b=$v; fi
	done
	echo "${b:-n/a}"
}

plain=$(best "$TGT" "$N")
main_only=$(best "$ATF" record -o "$tmp/rec" -f main -- "$TGT" "$N")
one=$(best "$ATF" record -o "$tmp/rec" -f 'thrower_c*' -- "$TGT" "$N")
three=$(best "$ATF" record -o "$tmp/rec" -f main -f 'thrower_*' -- "$TGT" "$N")
# an untraced copy while a traced one records: the hooks filter it out by tgid
mkfifo "$tmp/ready"
"$ATF" record -o "$tmp/bg" --ready-file "$tmp/ready" -f main -f 'thrower_*' -- "$TGT" 200000 \
	>/dev/null 2>&1 &
bg=$!
cat "$tmp/ready" >/dev/null     # the probes are attached
other=$(best "$TGT" "$N")
kill -INT "$bg" 2>/dev/null
wait "$bg" 2>/dev/null

printf '%-46s %10s ns\n' "throw+catch, untraced" "$plain" \
	"throw+catch, only main traced (2 holds)" "$main_only" \
	"throw+catch, thrower_c traced (1 hold)" "$one" \
	"throw+catch, main + 3 frames traced (2 holds)" "$three" \
	"throw+catch, untraced while another records" "$other"
echo "(N=$N throws per run, best of $REPEAT; a hold = SIGSTOP, stack write by the recorder, SIGCONT)"
