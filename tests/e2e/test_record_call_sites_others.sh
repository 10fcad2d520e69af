#!/usr/bin/env bash
# record --call-sites and the rest of the world. No function's first bytes are written, so:
#   - bpftrace probing a redirected function's entry, attached and detached 30 times while four
#     threads call it hot, never harms the target (with entry trampolines and no guard it dies
#     at once: the kernel runs the file's first instruction and resumes inside our jmp), and
#     counts exactly the indirect calls after its registration (the first bpftrace hands tr_mov
#     back: from then on its direct calls reach its entry too; test_record_call_sites_handback.sh
#     counts those);
#   - the recording stays exact meanwhile: every call, redirected or not, once;
#   - a recorder killed with -9 leaves the stubs without probes: the target runs on right;
#   - a child forked during the session runs through the stubs too.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
CS=$TARGETS/callsites
[ -x "$CS" ] || fail "build first: make OUTPUT=$OUTPUT targets"
NT=4 K=3000 ROUNDS=30

# ---- bpftrace on tr_mov's entry, 30 times, while four threads call it -------------------------
mkfifo "$T/hot" "$T/ready"
"$CS" threads $NT $K "$T/hot" >"$T/threads.out" &
target=$!
timeout 60 cat "$T/hot" >/dev/null || fail "nothing came through $T/hot in 60 s"
"$ATF" record --call-sites -p $target -v -o "$T/h" -f 'tr_*' --ready-file "$T/ready" 2>"$T/h.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/h.err" >&2; fail "record -p --call-sites never became ready"; }
assert_contains "$T/h.err" "callsites: [1-9][0-9]* call sites of [1-9][0-9]* functions redirected" "tr_mov's and tr_sub's calls redirected"
for i in $(seq $ROUNDS); do
	bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$CS:tr_mov { @calls = count(); }" >"$T/bt$i.out" 2>&1 &
	bt=$!
	wait_for "$T/bt$i.out" "^ready$" "bpftrace round $i attached"
	stop_bpftrace $bt
	kill -0 $target 2>/dev/null || fail "the target died in bpftrace round $i"
done
# the last one counts the indirect calls each thread makes after SIGUSR1: K, x >= 1000000
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$CS:tr_mov /arg0 >= 1000000/ { @calls = count(); }
	uprobe:$CS:tr_mark { @marks = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace (counting) attached"
# tr_mark, a lone ret, is redirected too: its calls reach bpftrace's probe once handed back
wait_for "$T/h.err" "^atftrace record: tr_mark \(callsites\) handed back: " "tr_mark handed back to bpftrace"
kill -USR1 $target              # each thread: tr_mark, then exactly K of each, then tr_done
wait $target || fail "the threaded target failed"
stop_bpftrace $bt
assert_eq "threads $NT calls $K" "$(cat "$T/threads.out")" "the threaded target's own count"
assert_eq $((NT * K)) "$(awk '/^@calls:/ { print $2 }' "$T/bt.out")" "bpftrace's count of the indirect tr_mov calls after SIGUSR1"
assert_eq $NT "$(awk '/^@marks:/ { print $2 }' "$T/bt.out")" "bpftrace's count of tr_mark (entered at its first bytes)"
wait $rec || { cat "$T/h.err" >&2; fail "record -p --call-sites failed"; }
"$ATF" verify "$T/h" >/dev/null || fail "verify"
mark_window_counts "$T/h" >"$T/h.win"
assert_eq $NT "$(wc -l <"$T/h.win")" "threads that reached the mark"
assert_eq $NT "$(awk -v k=$K '$2 == 1 && $3 == k && $4 == 2 * k' "$T/h.win" | wc -l)" \
	"threads with exactly $K calls of tr_sub and $((2 * K)) of tr_mov (redirected and indirect) after the mark, under bpftrace"

# ---- the recorder killed with -9: the stubs stay, without probes -------------------------------
mkfifo "$T/served" "$T/kready"
"$CS" serve "$T/served" >"$T/serve.out" &
target=$!
timeout 60 cat "$T/served" >/dev/null || fail "the serving target never became ready"
"$ATF" record --call-sites -p $target -o "$T/k" -f 'tr_*' -f 'cs_*' --ready-file "$T/kready" 2>"$T/k.err" &
rec=$!
timeout 60 cat "$T/kready" >/dev/null || { cat "$T/k.err" >&2; fail "record -p --call-sites never became ready"; }
kill -KILL $rec
wait $rec 2>/dev/null || true
[ "$(text_diff $target "$CS")" -gt 0 ] || fail "the redirected calls are gone after kill -9 (expected them to stay)"
kill -USR1 $target              # 1000 more rounds through the probe-less stubs, then a file
wait_for_file() { timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.05; done' _ "$1" || fail "$2"; }
wait_for_file "$T/served.more" "the target did not make 1000 rounds after the recorder's kill -9"
kill -TERM $target
wait $target || fail "the target failed after the recorder's kill -9: $(cat "$T/serve.out")"
assert_contains "$T/serve.out" "^served [1-9][0-9]*$" "the served target's count"

# ---- a child forked during the session ----------------------------------------------------------
"$CS" fork 200 >"$T/fork.plain" || fail "the untraced fork run failed"
"$ATF" record --call-sites -v -o "$T/f" -f 'tr_*' -f 'cs_*' -- "$CS" fork 200 >"$T/fork.out" 2>"$T/f.err" \
	|| { cat "$T/f.err" >&2; fail "record --call-sites of a forking target failed"; }
cmp -s "$T/fork.plain" "$T/fork.out" || fail "the forking target's output differs from the untraced run's"
if grep -q "the target" "$T/f.err"; then fail "fork: $(grep 'the target' "$T/f.err")"; fi
echo "ok: --call-sites under $ROUNDS bpftrace rounds, a kill -9 of the recorder and a fork"
