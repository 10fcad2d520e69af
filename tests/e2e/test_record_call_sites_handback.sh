#!/usr/bin/env bash
# record --call-sites hands a function back when another tool registers a uprobe on it
# (bpf/cs_handback.bpf.h notes the registration, user/patch/callsite_handback.c writes its sites
# back). Four threads of tests/targets/callsites (rounds mode), launched by the session, call
# tr_sub and tr_mov directly, hot, the whole time; each round ("ask K") makes every thread call
# tr_mark, exactly K of tr_sub, K of tr_mov directly and K through a pointer, then tr_done.
#   - bpftrace (perf_event_open, the uprobe PMU) on tr_sub, three times: the first one hands
#     tr_sub back, and only tr_sub (one line); each counts exactly NT*K calls of tr_sub in
#     the round (without the hand-back it would see none: they enter past tr_sub's first bytes);
#   - a tracefs uprobe event defined on tr_mov (a write to uprobe_events) hands tr_mov back
#     before it is enabled; enabled in a tracefs instance with a filter, it counts exactly;
#   - a second atftrace session with plain probes (uprobe-session links, bpf(BPF_LINK_CREATE))
#     hands back the last redirected function, tr_lea: the text is then byte for byte the
#     file's (through /proc/PID/mem), and that session's counts of the round are exact too;
#   - the session's own counts of tr_sub and tr_mov are every call the target made (it says);
#   - the same bpftrace hand-back with the raw sys_exit tracepoint (ATFTRACE_GUARD=raw).
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
CS=$(realpath "$TARGETS/callsites")
[ -x "$CS" ] || fail "build first: make OUTPUT=$OUTPUT targets"
NT=4 K=1000
TRACING=/sys/kernel/tracing
GROUP=atfhb$$

# file_offset SYMBOL: the file offset of SYMBOL in the target (a uprobe's offset)
file_offset() {
	python3 - "$CS" "$1" <<'PY'
import subprocess, sys
path, sym = sys.argv[1], sys.argv[2]
addr = [int(l.split()[0], 16) for l in subprocess.check_output(["nm", path]).decode().splitlines()
        if len(l.split()) == 3 and l.split()[2] == sym][0]
for l in subprocess.check_output(["readelf", "-lW", path]).decode().splitlines():
    a = l.split()
    if a and a[0] == "LOAD" and int(a[2], 16) <= addr < int(a[2], 16) + int(a[4], 16):
        print(hex(addr - int(a[2], 16) + int(a[1], 16)))
PY
}
cleanup_tracefs() {
	[ -d "$TRACING/instances/$GROUP" ] && rmdir "$TRACING/instances/$GROUP" 2>/dev/null || true
	grep -q "^p:$GROUP/" "$TRACING/uprobe_events" 2>/dev/null && echo "-:$GROUP/trmov" >>"$TRACING/uprobe_events" || true
}
# the tracefs event goes, on failure too (after kill_on_exit's trap has ended the processes)
old_exit=$(trap -p EXIT)
old_exit=${old_exit% EXIT}
eval "${old_exit%\'}; cleanup_tracefs' EXIT"

# start NAME [ENV...]: launch the target under record --call-sites (stdin $T/NAME.in on fd 3,
# stdout $T/NAME.out on fd 4); sets rec and target
start() {
	local n=$1
	shift
	mkfifo "$T/$n.in" "$T/$n.out" "$T/$n.tready" "$T/$n.ready"
	env "$@" "$ATF" record --call-sites -v -o "$T/$n" -f 'tr_*' --ready-file "$T/$n.ready" \
		-- "$CS" rounds $NT "$T/$n.tready" <"$T/$n.in" >"$T/$n.out" 2>"$T/$n.err" &
	rec=$!
	exec 3>"$T/$n.in" 4<"$T/$n.out"
	timeout 60 cat "$T/$n.ready" >/dev/null || { cat "$T/$n.err" >&2; fail "$n: record --call-sites never became ready"; }
	timeout 60 cat "$T/$n.tready" >/dev/null || fail "$n: the target's threads never ran"
	target=$(sed -n 's/^atftrace record: launched \([0-9]*\):.*/\1/p' "$T/$n.err")
	[ -n "$target" ] || fail "$n: no target pid"
}
ask() {     # K: one round of K calls per thread and function
	echo "$1" >&3
}
answer() {  # K: the round's answer, as the threads counted it
	local reply
	read -r -t 120 -u 4 reply || fail "no answer from the target for round $1"
	assert_eq "round $1: tr_sub $((NT * $1)) tr_mov $((2 * NT * $1))" "$reply" "round $1, as the target counted it"
}
handed() {  # SESSION FUNCTION: the pattern of its hand-back line
	echo "^atftrace record: $1 \\(callsites\\) handed back: another tool registered a uprobe on it; ([0-9]+) of its \\1 redirected call sites? written back"
}
# bpftrace_round SESSION I: bpftrace on tr_sub (and the round's marks) counts one round exactly
bpftrace_round() {
	local s=$1 i=$2 bt
	bpftrace -e "BEGIN { printf(\"ready\\n\"); }
		uprobe:$CS:tr_mark { @in[tid] = 1; } uprobe:$CS:tr_done { delete(@in[tid]); }
		uprobe:$CS:tr_sub /@in[tid]/ { @sub = count(); }" >"$T/$s.bt$i" 2>&1 &
	bt=$!
	wait_for "$T/$s.bt$i" "^ready$" "$s: bpftrace $i attached"
	# its three functions (the marks are redirected too: each is a lone ret)
	for f in tr_mark tr_done tr_sub; do
		wait_for "$T/$s.err" "$(handed $f)" "$s: $f handed back to bpftrace"
	done
	ask $K; answer $K
	stop_bpftrace $bt
	assert_eq $((NT * K)) "$(awk '/^@sub:/ { print $2 }' "$T/$s.bt$i")" "$s: bpftrace $i's count of tr_sub in the round"
}
# finish SESSION: end the target; the session's counts are every call it made
finish() {
	local s=$1 total
	exec 3>&-
	read -r -t 120 -u 4 total || fail "$s: no total from the target"
	wait $target 2>/dev/null || true
	wait $rec || { cat "$T/$s.err" >&2; fail "$s: record --call-sites"; }
	exec 4<&-
	"$ATF" verify "$T/$s" >/dev/null || fail "$s: verify"
	assert_eq "$total" "total: $("$ATF" report --csv "$T/$s" | awk -F, '$1 == "\"tr_sub\"" { s = $2 } $1 == "\"tr_mov\"" { m = $2 }
		END { print "tr_sub", s + 0, "tr_mov", m + 0 }')" "$s: the session's counts against the target's own"
}

# ---- bpftrace, a tracefs event and another atftrace session, one after the other ---------------
start s1
assert_contains "$T/s1.err" "hand-back notice on the bpf and perf_event_open exit tracepoints, for 1 file" "s1: the notice is armed"
assert_contains "$T/s1.err" "callsites: [1-9][0-9]* call sites of 5 functions redirected" "s1: tr_sub, tr_mov, tr_lea, tr_mark and tr_done redirected"
[ "$(text_diff $target "$CS" int3)" -gt 0 ] || fail "s1: no redirected call in the text"
ask $K; answer $K
if grep -q ") handed back: " "$T/s1.err"; then fail "s1: handed back before any other tool came"; fi
for i in 1 2 3; do
	bpftrace_round s1 $i
	kill -0 $target || fail "s1: the target died under bpftrace $i"
done
assert_eq 3 "$(grep -c ") handed back: " "$T/s1.err")" "s1: three hand-backs (tr_sub, tr_mark, tr_done) for three bpftrace runs"

# tracefs: defining the event hands tr_mov back; enabled in an instance, it counts the round's
# direct and indirect calls whose x is >= 4 (the hot loop's x is the thread's number, 0-3)
echo "p:$GROUP/trmov $CS:$(file_offset tr_mov) x=%di:s32" >>"$TRACING/uprobe_events"
wait_for "$T/s1.err" "$(handed tr_mov)" "s1: tr_mov handed back at the tracefs event's definition"
mkdir "$TRACING/instances/$GROUP"
echo 'x >= 4' >"$TRACING/instances/$GROUP/events/$GROUP/trmov/filter"
echo 1 >"$TRACING/instances/$GROUP/events/$GROUP/trmov/enable"
ask $K; answer $K
echo 0 >"$TRACING/instances/$GROUP/events/$GROUP/trmov/enable"
assert_eq $((NT * (2 * K - 4))) "$(grep -c " trmov: " "$TRACING/instances/$GROUP/trace")" \
	"s1: the tracefs event's count of tr_mov calls with x >= 4 in the round (direct ones from 4, every indirect one)"
cleanup_tracefs
assert_eq 4 "$(grep -c ") handed back: " "$T/s1.err")" "s1: four hand-backs"

# another atftrace session with plain probes (uprobe-session links) on every tr_ function
mkfifo "$T/p.ready"
"$ATF" record --no-trampolines -p $target -o "$T/p" -f 'tr_*' --ready-file "$T/p.ready" 2>"$T/p.err" &
prec=$!
timeout 60 cat "$T/p.ready" >/dev/null || { cat "$T/p.err" >&2; fail "the plain session never became ready"; }
wait_for "$T/s1.err" "$(handed tr_lea)" "s1: tr_lea handed back to the plain session"
assert_eq 5 "$(grep -c ") handed back: " "$T/s1.err")" "s1: five hand-backs"
assert_eq 0 "$(text_diff $target "$CS" int3)" "s1: the text (but for breakpoints) once every redirected function is handed back"
ask $K; answer $K
kill -INT $prec
wait $prec || { cat "$T/p.err" >&2; fail "the plain session"; }
"$ATF" verify "$T/p" >/dev/null || fail "the plain session: verify"
mark_window_counts "$T/p" >"$T/p.win"
assert_eq $NT "$(awk -v k=$K '$2 == 1 && $3 == k && $4 == 2 * k' "$T/p.win" | wc -l)" \
	"the plain session: threads with exactly $K calls of tr_sub and $((2 * K)) of tr_mov in the round"
ask $K; answer $K
finish s1

# ---- the raw sys_exit tracepoint ---------------------------------------------------------------
start s2 ATFTRACE_GUARD=raw
assert_contains "$T/s2.err" "hand-back notice on the raw sys_exit tracepoint, for 1 file" "s2: the notice is armed"
bpftrace_round s2 1
assert_eq 3 "$(grep -c ") handed back: " "$T/s2.err")" "s2: three hand-backs (tr_sub, tr_mark, tr_done)"
finish s2
echo "ok: functions handed back to bpftrace, a tracefs event and a plain session; every count exact"
