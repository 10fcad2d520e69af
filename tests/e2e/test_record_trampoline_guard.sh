#!/usr/bin/env bash
# The registration guard (bpf/reg_guard.bpf.h): another tool (bpftrace) puts a uprobe on a
# function that a recording entered through a trampoline, while threads call it hot. Without
# the guard the target dies at once (SIGILL: the kernel resumes inside our jmp). With it:
#   - the target survives and computes right (it exits 0);
#   - the function is given back to its own bytes and traced by a plain probe: exact counts
#     from a mark on, for it and for a function still on its trampoline;
#   - bpftrace counts the calls too;
#   - ending the recording while bpftrace's probe is still there leaves exactly its int3 in
#     the text, and nothing once bpftrace is gone.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
TS=$TARGETS/tramp_sites
cleanup() { local j; for j in $(jobs -p); do kill -KILL "$j" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
[ -x "$TS" ] || fail "build first: make OUTPUT=$OUTPUT targets"

# ---- threads hot in tr_sub and tr_mov; bpftrace probes tr_sub during the recording ---------------
NT=4 K=3000
mkfifo "$T/hot" "$T/ready"
"$TS" threads $NT $K "$T/hot" &
target=$!
timeout 120 cat "$T/hot" >/dev/null || fail "nothing came through $T/hot in 120 s"
"$ATF" record --trampolines -p $target -v -o "$T/h" -f 'tr_*' --ready-file "$T/ready" 2>"$T/h.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/h.err" >&2; fail "record -p never became ready"; }
assert_contains "$T/h.err" "tramp_sites: [1-9][0-9]* functions? through trampolines" "tr_sub is patched"
assert_contains "$T/h.err" "registration guard on the bpf and perf_event_open syscall tracepoints" "the guard's way in with tracefs"
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$TS:tr_sub { @calls = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace attached"
wait_for "$T/h.err" "process $target: tr_sub: another tool probed it; its trampoline is taken out and a plain probe traces it from now on" \
	"the guard gives tr_sub back"
kill -0 $target || fail "the target died when bpftrace probed a patched function"
kill -USR1 $target              # each thread: tr_mark, then exactly K of each, then tr_done
wait $target || fail "the threaded target failed under two tools"
stop_bpftrace $bt
wait $rec || { cat "$T/h.err" >&2; fail "record -p failed"; }
bt_calls=$(awk '/^@calls:/ { print $2 }' "$T/bt.out")
[ -n "$bt_calls" ] && [ "$bt_calls" -ge $((NT * K)) ] \
	|| { cat "$T/bt.out" >&2; fail "bpftrace counted ${bt_calls:-nothing} tr_sub calls, fewer than $((NT * K))"; }
"$ATF" verify "$T/h" >/dev/null || fail "verify"
mark_window_counts "$T/h" >"$T/h.win"
assert_eq $NT "$(wc -l <"$T/h.win")" "threads that reached the mark"
assert_eq $NT "$(awk -v k=$K '$2 == 1 && $3 == k && $4 == k' "$T/h.win" | wc -l)" \
	"threads with exactly $K calls of tr_sub (plain probe now) and tr_mov (trampoline) after the mark"

# ---- the recording ends while bpftrace's probe is still on a given-back function ---------------
rm -f "$T/ready"; mkfifo "$T/served" "$T/ready"
"$TS" serve "$T/served" >"$T/serve.out" &
target=$!
timeout 120 cat "$T/served" >/dev/null || fail "nothing came through $T/served in 120 s"
"$ATF" record --trampolines -p $target -o "$T/s" -f 'tr_*' --ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p (serve) never became ready"; }
bpftrace -e "uprobe:$TS:tr_lea { @calls = count(); }" >"$T/bt2.out" 2>&1 &
bt=$!
wait_for "$T/s.err" "process $target: tr_lea: another tool probed it" "the guard gives tr_lea back"
kill -INT $rec
wait $rec || { cat "$T/s.err" >&2; fail "record -p (serve) failed"; }
assert_eq 1 "$(text_diff $target "$TS")" "text after the recording: only bpftrace's int3 differs"
stop_bpftrace $bt
assert_eq 0 "$(text_diff $target "$TS")" "text once bpftrace is gone"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"

# ---- a child forked during the session runs the same patched text --------------------------------
# Its copy of tr_nop5's probe site, which the kernel optimised, calls a page the child does not
# have: it is held at its first instruction and given the kernel's int3 back (the trampolines'
# own sites are emulated nops: nothing to give back); and it is guarded too.
rm -f "$T/fsready"; mkfifo "$T/fsready"
"$ATF" record --trampolines -v -o "$T/fs" -f 'tr_*' -- "$TS" forkserve "$T/fsready" 2>"$T/fs.err" &
rec=$!
timeout 120 cat "$T/fsready" >/dev/null || fail "nothing came through $T/fsready in 120 s"     # the child serves
child=$(pgrep -n -f "tramp_sites forkserve $T/fsready")
assert_contains "$T/fs.err" "forked $child: [1-9][0-9]* probe sites given back their int3" "the forked child's probe sites"
bpftrace -e "uprobe:$TS:tr_mov { @calls = count(); }" >"$T/bt4.out" 2>&1 &
bt=$!
wait_for "$T/fs.err" "process $child \\(forked from [0-9]+\\): tr_mov: another tool probed it" "the guard gives tr_mov back in the child"
kill -TERM $child
wait $rec || { cat "$T/fs.err" >&2; fail "record forkserve failed"; }
if grep -q "the target" "$T/fs.err"; then fail "forkserve: $(grep 'the target' "$T/fs.err")"; fi
stop_bpftrace $bt

# ---- a recorder in a pid namespace (a sidecar) guards by the host's pid of its target, -----------
# ---- here on the raw syscall tracepoints ---------------------------------------------------------
command -v unshare >/dev/null || fail "unshare (util-linux) is missing"
mkdir "$T/ns"
cp "$TS" "$T/ns/ts"             # a private copy: only this test's processes run it
cat >"$T/ns/inside.sh" <<'INSIDE'
set -eu
cd "$1"; ATF=$2
mkfifo served ready
./ts serve served >serve.out &
t=$!
timeout 120 cat served >/dev/null
"$ATF" record --trampolines -v -p $t -o s -f 'tr_*' --ready-file ready 2>rec.err &
r=$!
timeout 120 cat ready >/dev/null
echo "$t" >target
timeout 60 sh -c 'until grep -q "another tool probed it" rec.err; do sleep 0.05; done' || true
kill -INT $r; wait $r
kill -TERM $t; wait $t
echo "inside: done"
INSIDE
# (and with the raw sys_enter/sys_exit tracepoints, the guard's way in without tracefs)
ATFTRACE_GUARD=raw unshare -pf --mount-proc --kill-child bash "$T/ns/inside.sh" "$T/ns" "$ATF" >"$T/ns/inside.out" 2>&1 &
inside=$!
wait_for "$T/ns/rec.err" "tramp_sites|ts: [1-9][0-9]* functions? through trampolines" "trampolines in a pid namespace"
wait_for "$T/ns/target" "^[0-9]+$" "the target's pid in the namespace"
bpftrace -e "uprobe:$T/ns/ts:tr_sub { @calls = count(); }" >"$T/bt3.out" 2>&1 &
bt=$!
wait_for "$T/ns/rec.err" "process $(cat "$T/ns/target"): tr_sub: another tool probed it; its trampoline is taken out" \
	"the guard in a pid namespace gives tr_sub back"
wait $inside || { cat "$T/ns/inside.out" "$T/ns/rec.err" >&2; fail "the target or the recorder in the pid namespace failed"; }
stop_bpftrace $bt
assert_contains "$T/ns/inside.out" "^inside: done$" "the namespace's target ran to its end"
assert_contains "$T/ns/rec.err" "registration guard on the raw sys_enter/sys_exit tracepoints" "the guard's raw way in"
