#!/usr/bin/env bash
# record --call-sites' plain entries (user/patch/callsite_plain.c): the jumps into a traced
# function that no stub takes enter it through `nop; jmp body` in the area, probed as its entry
# is, instead of its first instruction (a mov, which the kernel single-steps). On
# tests/targets/cs_tailplain (-O2):
#   - untraced_help, a static C function not traced, ends in `jmp tp_f`; untraced_cond (not
#     traced) in `jne tp_f`; tp_j (traced) begins with `jmp tp_f`;
#   - the -v lines: 4 sites (main's calls of tp_j and tp_outer, the two tail calls), the two
#     tail calls and tp_j's body's first jump aimed at tp_f's plain entry;
#   - exact calls per function and exactly the tree of plain probes (--no-trampolines): tp_f
#     under tp_j (a tail call from its body) and under tp_outer (through the untraced helper);
#     bpftrace counts the same calls of tp_f on a run without atftrace;
#   - BPF run counts (BPF_ENABLE_STATS), session and multi links: the plain entries' program
#     runs for every call of tp_f (entry and return: 2 runs a call with a session link), the
#     plain probe program at the functions' own entries not once;
#   - -p: bpftrace on tp_f hands it back: both tail sites get the file's bytes back and tp_j's
#     body jumps to tp_f's entry again, so bpftrace counts every call of tp_f exactly; the text is
#     the file's after the session; after a kill -9 of the recorder `atftrace restore -p` puts
#     the file's bytes back.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
CT=$TARGETS/cs_tailplain
[ -x "$CT" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/atf_raw" ] || fail "build first: make OUTPUT=$OUTPUT tools"
command -v bpftool >/dev/null || fail "bpftool is missing (scripts/deps.sh installs it)"
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
objdump -d "$CT" >"$T/dis" || fail "objdump cs_tailplain"
fn_dis() { awk -v f="<$1>:" '$2 == f { p = 1; next } p && NF == 0 { exit } p' "$T/dis"; }
fn_dis untraced_help | grep -qE "e9 .*jmp +[0-9a-f]+ <tp_f>" || fail "untraced_help does not end in jmp tp_f (rel32)"
fn_dis untraced_cond | grep -qE "0f 85 .*jne +[0-9a-f]+ <tp_f>" || fail "untraced_cond has no jne tp_f (rel32)"
[ "$(fn_dis tp_j | head -1 | grep -cE "e9 .*jmp +[0-9a-f]+ <tp_f>")" = 1 ] || fail "tp_j does not begin with jmp tp_f"
N=100
SEL=(-f 'tp_*')     # tp_f, tp_j, tp_outer; not untraced_help nor untraced_cond
CALLS_F=$((4 * N - 1))  # per round: from tp_j, untraced_help, tp_outer, untraced_cond (but round 0)

# ---- exact counts and tree, the same as plain probes and bpftrace --------------------------------
"$CT" all $N >"$T/plain.out" || fail "the untraced run failed"
"$ATF" record --call-sites -v -o "$T/cs" "${SEL[@]}" -- "$CT" all $N >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
assert_contains "$T/cs.err" "cs_tailplain: 4 call sites of 3 functions redirected \(4 direct, 0 through the PLT; 0 left out" \
	"main's calls of tp_j and tp_outer, and the two tail calls"
assert_contains "$T/cs.err" "cs_tailplain: 2 of them tail calls \(jmp or jcc\) to plain entries; 1 body's first jump aimed at one$" \
	"untraced_help's jmp, untraced_cond's jne and tp_j's first jmp, to tp_f's plain entry"
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's"
"$ATF" verify "$T/cs" >/dev/null || fail "verify the --call-sites session"
"$ATF" record --no-trampolines -o "$T/plain" "${SEL[@]}" -- "$CT" all $N >/dev/null 2>"$T/p.err" \
	|| { cat "$T/p.err" >&2; fail "record --no-trampolines failed"; }
assert_eq "$CALLS_F $N $N" "$("$ATF" report "$T/cs" | awk '
	{ c[$13] = $5 } END { print c["tp_f"], c["tp_j"], c["tp_outer"] }')" "calls of tp_f, tp_j, tp_outer"
"$ATF" dump "$T/cs" | normalise_dump >"$T/cs.tree"
"$ATF" dump "$T/plain" | normalise_dump >"$T/plain.tree"
diff "$T/plain.tree" "$T/cs.tree" >&2 || fail "the call tree differs between --call-sites and plain probes"
call_summary "$T/cs" >"$T/cs.sum"
assert_eq 0 "$(awk '$1 == "unwound" { print $2 }' "$T/cs.sum")" "frames closed as unwound with --call-sites"
# round 1: tp_f nested in tp_j (its body's jump) and in tp_outer (through untraced_help)
sed -n '/^# thread_0/,$p' "$T/cs.tree" | sed -n '9,16p' >"$T/round1"
cat >"$T/want" <<'TREE'
      | tp_j() {
<dur> |   tp_f();
<dur> | } /* tp_j */
<dur> | tp_f();
      | tp_outer() {
<dur> |   tp_f();
<dur> | } /* tp_outer */
<dur> | tp_f();
TREE
diff -u "$T/want" "$T/round1" >&2 || fail "round 1's tree"
# times in order, and each return after its callee's (tp_j's and tp_outer's after their tp_f's)
"$TOOLS/atf_raw" "$T"/cs/pid_*/thread_* | awk '
	$1 == "ev" && ($3 == "C" || $3 == "R") { if ($7 < last) bad++; last = $7; n++ }
	$1 == "ev" && $3 == "C" { ret[$5 + 1] = "" }
	$1 == "ev" && $3 == "R" { if (ret[$5 + 1] != "" && ret[$5 + 1] > $7) bad++; ret[$5] = $7 }
	END { exit bad > 0 || n != 2 * '"$((CALLS_F + 2 * N))"' }' || fail "events or return times out of order"
need_tracefs
bpftrace -q -e "uprobe:$CT:tp_f { @f = count(); }" -c "$CT all $N" >"$T/bt.out" 2>"$T/bt.err" </dev/null \
	|| { cat "$T/bt.err" >&2; fail "bpftrace failed"; }
assert_eq "$CALLS_F" "$(awk '/^@f:/ { print $2 }' "$T/bt.out")" "bpftrace's count of tp_f"

# ---- which programs ran: the plain entries', never the entries' own plain probes ------------------
# run_counts LINK: with BPF statistics on, a --call-sites session of N rounds through the gate;
# prints the run counts of the recorder's own programs (found by its fdinfo) after the rounds
run_counts() {
	ATFTRACE_LINK=$1 python3 - "$ATF" "$CT" "$T/rcdir_$1" $N "${SEL[@]}" <<'PY'
import ctypes, errno, json, os, re, subprocess, sys, time
atf, ct, out, n, specs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)                 # BPF_ENABLE_STATS, BPF_STATS_RUN_TIME
stats = libc.syscall(321, 32, attr, 128)
if stats < 0:
    sys.exit("BPF_ENABLE_STATS failed")
ctl = out + ".ctl"
os.mkfifo(ctl)
rec = subprocess.Popen([atf, "record", "--call-sites", "-v", "-o", out] + specs +
                       ["--", ct, "gate", ctl], stdout=subprocess.PIPE, stderr=open(out + ".err", "w"),
                       text=True)
deadline = time.time() + 60
while True:                                             # the target opens the gate's other end
    try:
        fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
        break
    except OSError as e:
        if e.errno != errno.ENXIO or rec.poll() is not None or time.time() > deadline:
            sys.exit("the target never opened its gate")
        time.sleep(0.02)
os.set_blocking(fd, True)
os.write(fd, (n + "\n").encode())
line = rec.stdout.readline()
counts = {}
ids = set()
for f in os.listdir("/proc/%d/fdinfo" % rec.pid):
    try:
        m = re.search(r"^prog_id:\s*(\d+)", open("/proc/%d/fdinfo/%s" % (rec.pid, f)).read(), re.M)
    except OSError:
        continue
    if m:
        ids.add(m.group(1))
for i in ids:
    p = json.loads(subprocess.run(["bpftool", "prog", "show", "id", i, "--json"],
                                  capture_output=True, text=True).stdout or "{}")
    if p.get("name"):
        counts[p["name"]] = counts.get(p["name"], 0) + p.get("run_cnt", 0)
os.write(fd, b"q\n")
os.close(fd)
rec.stdout.read()
rec.wait(timeout=120)
print(line.strip())
for k in ("atf_session", "atf_multi_entry", "atf_multi_return", "atf_site_plain", "atf_site_plain_entry",
          "atf_site_fn_entry", "atf_site_tail"):
    print(k, counts.get(k, 0))
PY
}
SUM=$(awk '{ print $2 }' "$T/plain.out")
run_counts session >"$T/rc_session" || fail "run counts, session link"
assert_eq "done $N $SUM" "$(head -1 "$T/rc_session")" "session link: the gated rounds"
assert_eq 0 "$(awk '$1 == "atf_session" { print $2 }' "$T/rc_session")" \
	"session link: runs of the plain probes at the functions' entries"
assert_eq $((2 * CALLS_F)) "$(awk '$1 == "atf_site_plain" { print $2 }' "$T/rc_session")" \
	"session link: runs of the plain entries' program (an entry and a return per call of tp_f)"
assert_eq $((2 * N)) "$(awk '$1 == "atf_site_fn_entry" { print $2 }' "$T/rc_session")" \
	"session link: calls through the stubs (tp_j, tp_outer)"
run_counts multi >"$T/rc_multi" || fail "run counts, multi links"
assert_eq "done $N $SUM" "$(head -1 "$T/rc_multi")" "multi links: the gated rounds"
assert_eq 0 "$(awk '$1 == "atf_multi_entry" { print $2 }' "$T/rc_multi")" \
	"multi links: runs of the plain entry probes at the functions' entries"
assert_eq "$CALLS_F" "$(awk '$1 == "atf_site_plain_entry" { print $2 }' "$T/rc_multi")" \
	"multi links: runs of the plain entries' entry program"
assert_eq "$CALLS_F" "$(awk '$1 == "atf_multi_return" { print $2 }' "$T/rc_multi")" \
	"multi links: return runs (tp_f's, which close tp_j's tail-calling frame too)"

# ---- -p: a hand-back of tp_f gives every jump its target back; kill -9, then restore -------------
mkfifo "$T/ctl" "$T/ready" "$T/ready2"
"$CT" gate "$T/ctl" >"$T/gate.out" &
target=$!
exec 3>"$T/ctl"         # the target has its end open: it waits for a line
"$ATF" record --call-sites -v -p $target -o "$T/hb" "${SEL[@]}" --ready-file "$T/ready" 2>"$T/hb.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/hb.err" >&2; fail "record -p never became ready"; }
assert_contains "$T/hb.err" "cs_tailplain: 2 of them tail calls \(jmp or jcc\) to plain entries; 1 body's first jump aimed at one$" \
	"-p: the jumps aimed at tp_f's plain entry"
[ "$(text_diff $target "$CT" int3)" -gt 0 ] || fail "no redirected site in the text during the session"
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$CT:tp_f { @f = count(); }" >"$T/bt2.out" 2>&1 &
bt=$!
wait_for "$T/bt2.out" "^ready$" "bpftrace attached"
wait_for "$T/hb.err" "^atftrace record: tp_f \(cs_tailplain\) handed back: another tool registered a uprobe on it; 2 of its 2 redirected call sites written back" \
	"tp_f handed back, its tail sites written back"
echo $N >&3
wait_for "$T/gate.out" "^done $N " "the rounds after the hand-back"
stop_bpftrace $bt
assert_eq "$CALLS_F" "$(awk '/^@f:/ { print $2 }' "$T/bt2.out")" \
	"bpftrace's count of tp_f after the hand-back (tp_j's jump back at tp_f's entry)"
kill -INT $rec
wait $rec || { cat "$T/hb.err" >&2; fail "record -p (hand-back) failed"; }
"$ATF" verify "$T/hb" >/dev/null || fail "verify the -p session"
assert_eq 0 "$(text_diff $target "$CT")" "bytes of the text that differ from the file after the session"
"$ATF" record --call-sites -v -p $target -o "$T/k" "${SEL[@]}" --ready-file "$T/ready2" 2>"$T/k.err" &
rec=$!
timeout 60 cat "$T/ready2" >/dev/null || { cat "$T/k.err" >&2; fail "the second record -p never became ready"; }
assert_contains "$T/k.err" "cs_tailplain: 2 of them tail calls \(jmp or jcc\) to plain entries" "the second session's plain tail sites"
kill -KILL $rec
rc=0; wait $rec || rc=$?
assert_eq 137 $rc "the recorder's status after kill -9"
[ "$(text_diff $target "$CT")" -gt 0 ] || fail "kill -9: the redirected sites should stay"
echo $N >&3
timeout 60 bash -c 'until [ "$(grep -c "^done" "$1")" -ge 2 ]; do sleep 0.05; done' _ "$T/gate.out" \
	|| fail "the rounds after the recorder's kill -9 never ended"
"$ATF" restore -p $target >"$T/r.out" 2>"$T/r.err" || { cat "$T/r.out" "$T/r.err" >&2; fail "restore"; }
assert_contains "$T/r.out" "cs_tailplain: restored 4 of 4 patches$" "restore's line"
assert_eq 0 "$(text_diff $target "$CT")" "bytes of the text that differ from the file after restore"
echo q >&3
exec 3>&-
wait $target || fail "the gated target failed: $(cat "$T/gate.out")"
[ "$(grep -c "^done $N $SUM$" "$T/gate.out")" = 2 ] || fail "the gated target's sums: $(cat "$T/gate.out")"
echo "ok: $N rounds of jumps into tp_f through its plain entry, as plain probes and bpftrace count them; handed back; restored after kill -9"
