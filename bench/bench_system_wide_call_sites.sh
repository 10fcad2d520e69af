#!/usr/bin/env bash
# record -a --call-sites (user/cmd/record_call_sites_all.c), figures only; nothing here asserts
# a time. $PROCS copies of one shell process (a private copy of bash, so that no other process of
# the host is touched), each waiting on its own FIFO when the session starts, then running a
# loop of $LOOPS iterations with a shell function call, with every function of that bash traced:
# with --call-sites and with plain probes, the time from the start of `record -a` to its ready
# file (the running processes' redirection is in it), the processes' wall time, how long each
# process's attach took (-v), and whether the calls per function are the same (they must be).
#   bench/bench_system_wide_call_sites.sh      SWCS_PROCS=10 SWCS_LOOPS=300
set -u
cd "$(dirname "$0")/.."
ATF=$PWD/${OUTPUT:-.output}/atftrace
PROCS=${SWCS_PROCS:-10}
LOOPS=${SWCS_LOOPS:-300}
D=$(mktemp -d /tmp/atftrace-bench-swcs.XXXXXX)
REC=
trap '[ -n "$REC" ] && kill -INT $REC 2>/dev/null; wait; rm -rf "$D"' EXIT
cp "$(readlink -f /bin/bash)" "$D/bash"
ms() { echo $(( ($2 - $1) / 1000000 )); }

run() {         # mode (cs or plain): one session; the calls per function in $D/MODE.calls
	local mode=$1 pids=() t0 t1 t2 t3 i
	rm -rf "$D/s" "$D/ready" "$D"/go*
	mkfifo "$D/ready"
	for i in $(seq "$PROCS"); do
		mkfifo "$D/go$i"
		"$D/bash" -c "read x <$D/go$i; for i in \$(seq $LOOPS); do y=\$((i * 2)); f() { echo \$1; }; f \$y >/dev/null; done" &
		pids+=($!)
	done
	t0=$(date +%s%N)
	"$ATF" record -a $([ "$mode" = cs ] && echo --call-sites) -v -f "$D/bash:*" -o "$D/s" \
		--ready-file "$D/ready" 2>"$D/$mode.err" &
	REC=$!
	timeout 120 cat "$D/ready" >/dev/null || { cat "$D/$mode.err" >&2; exit 1; }
	t1=$(date +%s%N)
	for i in $(seq "$PROCS"); do echo go >"$D/go$i"; done
	t2=$(date +%s%N)
	wait "${pids[@]}"
	t3=$(date +%s%N)
	kill -INT $REC
	wait $REC
	REC=
	printf "%-6s start to ready %5d ms, %d processes' loops %6d ms, %s\n" "$mode" "$(ms "$t0" "$t1")" \
		"$PROCS" "$(ms "$t2" "$t3")" "$(grep -o '[0-9]* events' "$D/$mode.err" | tail -n 1)"
	"$ATF" report "$D/s" | awk 'NR > 2 { c[$13] += $5 } END { for (f in c) print f, c[f] }' | sort >"$D/$mode.calls"
}

run cs
grep -E "call sites? redirected in" "$D/cs.err" | awk '{ n++; s += $(NF - 1); if ($(NF - 1) > m) m = $(NF - 1); k = $(NF - 6) }
	END { if (n) printf "attach per process (%d, %d sites each): mean %.1f ms, max %.1f ms\n", n, k, s / n, m }'
run plain
if cmp -s "$D/plain.calls" "$D/cs.calls"; then
	echo "calls per function: the same ($(wc -l <"$D/cs.calls") functions)"
else
	echo "calls per function DIFFER:"; diff "$D/plain.calls" "$D/cs.calls" | head -5
fi
