#!/usr/bin/env bash
# Forked children never depend on the ring: with the recorder stopped (kill -STOP) while the
# target forks, and the ring full (64 KiB, two hot threads), every child exits 0 and, after the
# session, recorded + lost events = the events the target made, exactly.
#   1. entry trampolines (fc_lea): their probe site is a nop the kernel emulates, never the
#      optimised call into a page that fork does not copy: the children run and end while the
#      recorder is still stopped (no fix-up at all).
#   2. plain probes on a function that starts with a 5-byte nop (fc_nop5, --no-trampolines):
#      its site is optimised in the parent, so each child is stopped at its fork and noted in
#      a BPF map (not in the full ring); once the recorder runs again it gives each child its
#      int3 back and resumes it.
#   3. the same, but the recorder is killed (-9) while the children wait: its watchdog gives
#      each child its 5-byte nop back (the probes are gone with the recorder) and resumes it.
#   4. the same fix-up in a system-wide session (-a), the target started on its own (the
#      recorder is not stopped here: -a holds the children of every process on the host).
# tests/targets/fork_calls: DIR/ready, then a line on the fifo DIR/go makes it fork; each child
# writes DIR/child.<i> and exits 0 when its results were right; DIR/forked once all are forked,
# DIR/done ("children N ok OK calls HOT 1") once all are reaped. Synchronised on those files.
# Whatever fails, the recorder, the target and its children are killed at exit (kill_on_exit).
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit

FC=$TARGETS/fork_calls
NCHILD=20
NCALLS=500

# wait_file FILE WHAT: until FILE exists (60 s at most)
wait_file() {
	timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.02; done' _ "$1" || fail "$2: no $1 in 60 s"
}
# start NAME OPTIONS...: record fork_calls with OPTIONS, stopped (kill -STOP) once it is ready,
# then told to fork
start() {
	NAME=$1 D=$T/$1.d
	mkdir "$D" && mkfifo "$D/go"
	"$ATF" record -v --follow-fork --ring-size 64K -o "$T/$NAME" "${@:2}" \
		-- "$FC" "$D" $NCHILD $NCALLS 2 >"$T/$NAME.out" 2>"$T/$NAME.err" &
	REC=$!
	wait_file "$D/ready" "$NAME: target ready"
	kill -STOP $REC
	timeout 60 bash -c 'echo go >"$1"' _ "$D/go" || fail "$NAME: the target did not read $D/go"
}
# finish WANT_FUNCTION_CALLS: resume the recorder, wait for the end; every child exited 0 and
# recorded + lost = 2 x (the hot threads' calls + WANT_FUNCTION_CALLS)
finish() {
	kill -CONT $REC
	wait $REC || { cat "$T/$NAME.err" >&2; fail "$NAME: record (or the target) failed"; }
	wait_file "$D/done" "$NAME: target done"
	read -r _ n _ ok _ hot parent <"$D/done"
	assert_eq "$NCHILD $NCHILD" "$n $ok" "$NAME: children that exited 0"
	read -r recorded lost <<<"$(sed -n 's/^atftrace record: \([0-9]*\) events .*, \([0-9]*\) lost, .*/\1 \2/p' "$T/$NAME.err")"
	[ "${lost:-0}" -gt 0 ] || fail "$NAME: nothing was lost: the ring never filled"
	assert_eq $((2 * (hot + $1))) $((recorded + lost)) "$NAME: recorded $recorded + lost $lost events"
	"$TOOLS/record_stats" "$T/$NAME" >"$T/$NAME.stats"
	assert_eq $((NCHILD + 1)) "$(awk '$1 == "processes" { print $2 }' "$T/$NAME.stats")" "$NAME: processes"
}

# 1. trampolines: the children need nothing from the recorder
start tramp --trampolines -f fc_lea -f fc_hot
assert_contains "$T/tramp.err" "^atftrace record: 2 functions entered through trampolines" \
	"tramp: fc_lea and fc_hot on trampolines"
for i in $(seq 0 $((NCHILD - 1))); do
	wait_file "$D/child.$i" "tramp: child $i ended while the recorder was stopped"
done
finish $((1 + NCHILD * NCALLS))
if grep -q "given back their int3" "$T/tramp.err"; then fail "tramp: a child was fixed up"; fi

# 2. a 5-byte nop probed where it is: each child waits, stopped, for the recorder's fix-up
start nop5 --no-trampolines -f fc_nop5 -f fc_hot
wait_file "$D/forked" "nop5: children forked"
for pid in $(cat "$D/pids"); do
	assert_eq T "$(awk '{ print $3 }' /proc/"$pid"/stat)" "nop5: child $pid stopped at its fork"
done
finish $((1 + NCHILD * NCALLS))
assert_eq $NCHILD "$(grep -cE 'forked [0-9]+: 1 probe sites given back their int3' "$T/nop5.err")" \
	"nop5: children given their int3 back"
# 3. the recorder dies while the children wait: the watchdog fixes and resumes them
start nop5kill --no-trampolines -f fc_nop5 -f fc_hot
wait_file "$D/forked" "nop5kill: children forked"
for pid in $(cat "$D/pids"); do
	assert_eq T "$(awk '{ print $3 }' /proc/"$pid"/stat)" "nop5kill: child $pid stopped at its fork"
done
target=$(cat /proc/$REC/task/*/children)
EXIT_PIDS+=($target)        # no longer a job's descendant once the recorder is gone
kill -KILL $REC
wait $REC 2>/dev/null || true
wait_file "$D/done" "nop5kill: target done after the recorder's death"
read -r _ n _ ok _ <"$D/done"
assert_eq "$NCHILD $NCHILD" "$n $ok" "nop5kill: children that exited 0"
# 4. -a: the children of any process with an optimised site of ours are fixed the same way
NAME=all D=$T/all.d
mkdir "$D" && mkfifo "$D/go" "$T/all.ready"
"$ATF" record -a -v -o "$T/all" -f "$FC:fc_nop5" --ready-file "$T/all.ready" 2>"$T/all.err" &
REC=$!
timeout 60 cat "$T/all.ready" >/dev/null || { cat "$T/all.err" >&2; fail "all: the recorder never became ready"; }
"$FC" "$D" $NCHILD $NCALLS 0 >"$T/all.out" 2>&1 &
target=$!
wait_file "$D/ready" "all: target ready"
timeout 60 bash -c 'echo go >"$1"' _ "$D/go" || fail "all: the target did not read $D/go"
wait $target || { cat "$T/all.out" >&2; fail "all: a child failed"; }
kill -INT $REC
wait $REC || { cat "$T/all.err" >&2; fail "all: record failed"; }
read -r _ n _ ok _ <"$D/done"
assert_eq "$NCHILD $NCHILD" "$n $ok" "all: children that exited 0"
assert_eq $NCHILD "$(grep -cE 'forked [0-9]+: 1 probe sites given back their int3' "$T/all.err")" \
	"all: children given their int3 back"
read -r recorded lost <<<"$(sed -n 's/^atftrace record: \([0-9]*\) events .*, \([0-9]*\) lost, .*/\1 \2/p' "$T/all.err")"
assert_eq $((2 * (1 + NCHILD * NCALLS))) $((recorded + lost)) "all: recorded $recorded + lost $lost events"
echo "ok: $NCHILD children forked with the recorder stopped and the ring full, on trampolines and at a 5-byte nop; every event recorded or counted; a killed recorder's watchdog resumes them fixed; -a too"
