#!/usr/bin/env bash
# The registration guard stops a patched process only for a registration that may put a uprobe
# in it, not for unrelated activity on the host:
#   - perf stat over every sched tracepoint (hundreds of tracepoint perf events, -a): no stop;
#   - another atftrace session, on another process (its uprobe links are for that process
#     only): no stop;
#   - a tracefs uprobe event on the patched function, defined after the guard read the
#     tracepoint ids (an id it does not know yet) and opened through perf -a: a stop, and the
#     function is given back. Its record comes after those of the first two in the ring, so
#     once it is printed, any stop of theirs would have been too.
# Stops are counted from record -v, one line per stop, which names the registering thread.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
command -v perf >/dev/null || fail "perf is missing (scripts/deps.sh installs linux-perf)"
source "$(dirname "$0")/lib_guard.sh"

"$GL" loop "$T/ready" >"$T/loop.out" &
target=$!
wait_file "$T/ready" "the target runs"
guard_record_pid h $target
rec=$REC
assert_contains "$T/h.err" "gl: 1 function through trampolines" "gl_sub is patched"
assert_contains "$T/h.err" "registration guard: [1-9][0-9]* tracepoint ids read from" "the guard read the tracepoint ids"


perf stat -e 'sched:*' -a -- true 2>"$T/perf.err" &
perf1=$!
wait $perf1 || { cat "$T/perf.err" >&2; fail "perf stat"; }
n=$(grep -cE ' sched:' "$T/perf.err" || true)
[ "$n" -gt 10 ] || { cat "$T/perf.err" >&2; fail "perf stat counted $n sched events"; }

"$GL" loop "$T/other.ready" >"$T/other.out" &
other=$!
wait_file "$T/other.ready" "another process runs"
guard_record_pid o $other
kill -INT $REC
wait $REC || { cat "$T/o.err" >&2; fail "the other record -p failed"; }
other_rec=$REC
kill -TERM $other
wait $other || fail "the other target failed"

# the fence: a tracefs uprobe event on gl_sub defined now (its id is new to the guard), opened
# system-wide by perf
off=$(python3 - "$GL" <<'PY'
import subprocess, sys
out = subprocess.check_output(["readelf", "-Ws", "--program-headers", sys.argv[1]], text=True)
for l in out.splitlines():
    a = l.split()
    if a[:1] == ["LOAD"] and "E" in a[6:-1]:
        foff, vaddr = int(a[1], 16), int(a[2], 16)
    if a[-1:] == ["gl_sub"] and len(a) == 8:
        addr = int(a[1], 16)
print(hex(addr - vaddr + foff))
PY
)
ev=atfg$$
TRACEFS=/sys/kernel/tracing
echo "p:$ev/gl_sub $GL:$off" >>$TRACEFS/uprobe_events || fail "cannot define a tracefs uprobe event"
perf stat -e "$ev:gl_sub" -a -- true 2>"$T/perf2.err" &
perf2=$!
wait $perf2 || { echo "-:$ev/gl_sub" >>$TRACEFS/uprobe_events; cat "$T/perf2.err" >&2; fail "perf stat of the uprobe event"; }
echo "-:$ev/gl_sub" >>$TRACEFS/uprobe_events || fail "cannot delete the tracefs uprobe event"
wait_for "$T/h.err" "process $target: gl_sub: another tool probed it" \
	"a uprobe event on gl_sub defined after the guard started stops the target; gl_sub is given back"
assert_contains "$T/h.err" "thread $perf2 \(perf\) may be registering a uprobe \(syscall 298\): process $target stopped" \
	"the stop for the new uprobe event"
assert_eq 0 "$(count_lines "$T/h.err" "thread $perf1 \(perf\) may be registering")" \
	"stops of the target for perf stat -e 'sched:*' -a"
assert_eq 0 "$(count_lines "$T/h.err" "thread $other_rec \(atftrace\) may be registering")" \
	"stops of the target for an atftrace session on another process"
kill -INT $rec
wait $rec || { cat "$T/h.err" >&2; fail "record -p failed"; }
kill -TERM $target
wait $target || fail "the target failed: $(cat "$T/loop.out")"
assert_contains "$T/loop.out" "^loop [1-9][0-9]*$" "the target's loop"
