#!/usr/bin/env bash
# The way in by default: call sites (include/callsite.h) for a launched command and for -p, with
# no entry trampoline and no registration guard; entry trampolines (and their guard) only with
# --trampolines; -a keeps plain probes unless --call-sites. On tests/targets/callsites:
#   - launched, no option: -v says "call sites redirected", nothing through trampolines, no
#     guard; the output is the untraced run's, the calls per function those of plain probes;
#     with --detail=always call sites as well;
#   - -p, no option: the stubs' calls are in the text during the session, and the text is byte
#     for byte the file's after it, in a child forked during the session too (bash);
#   - -p on a process that a running session redirected: plain probes (one line), the first
#     session hands the function back, and both count its call exactly;
#   - --trampolines: functions entered through trampolines, the guard armed, no call site;
#   - -a, no option: plain probes (nothing redirected, no guard).
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
CS=$TARGETS/callsites
[ -x "$CS" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/atf_raw" ] || fail "build first: make OUTPUT=$OUTPUT tools"
N=300
"$CS" all $N >"$T/plain.out" || fail "the untraced run failed"

# no_trampolines ERR WHAT: ERR names no entry trampoline and no registration guard
no_trampolines() {
	if grep -q "through trampolines\|registration guard" "$1"; then
		fail "$2: $(grep 'through trampolines\|registration guard' "$1" | head -3)"
	fi
}

# ---- a launched command ------------------------------------------------------------------------
"$ATF" record -v -o "$T/def" -f 'tr_*' -f 'cs_*' -- "$CS" all $N >"$T/def.out" 2>"$T/def.err" \
	|| { cat "$T/def.err" >&2; fail "record (default) failed"; }
assert_contains "$T/def.err" "^atftrace record: [1-9][0-9]* call sites redirected$" "launched: call sites by default"
no_trampolines "$T/def.err" "launched: the default wrote an entry trampoline or armed the guard"
cmp -s "$T/plain.out" "$T/def.out" || fail "launched: the output differs from the untraced run's"
"$ATF" verify "$T/def" >/dev/null || fail "verify the default session"
"$ATF" record --no-trampolines -o "$T/plain" -f 'tr_*' -f 'cs_*' -- "$CS" all $N >/dev/null 2>"$T/plain.err" \
	|| { cat "$T/plain.err" >&2; fail "record --no-trampolines failed"; }
# (plain probes end the frames of cs_rec past the kernel's 64 uretprobes as unwound: not compared)
call_summary "$T/def" | grep -v '^unwound' >"$T/def.sum"
call_summary "$T/plain" | grep -v '^unwound' >"$T/plain.sum"
diff "$T/plain.sum" "$T/def.sum" >&2 || fail "launched: calls and parents differ from plain probes'"

# detail records what plain probes record through the stubs too
# (test_record_call_sites_detail.sh compares them): the default stays call sites
"$ATF" record -v --detail=always -o "$T/det" -f 'tr_*' -f 'cs_*' -- "$CS" all 10 >/dev/null 2>"$T/det.err" \
	|| { cat "$T/det.err" >&2; fail "record --detail=always (default) failed"; }
assert_contains "$T/det.err" "call sites redirected" "detail: call sites"
if grep -q "through trampolines\|plain probes" "$T/det.err"; then fail "detail: $(grep 'through trampolines\|plain probes' "$T/det.err")"; fi

# ---- -p ------------------------------------------------------------------------------------------
mkfifo "$T/served" "$T/ready"
"$CS" serve "$T/served" >"$T/serve.out" &
target=$!
timeout 60 cat "$T/served" >/dev/null || fail "the serving target never became ready"
assert_eq 0 "$(text_diff $target "$CS")" "-p: bytes of the text that differ from the file before the session"
"$ATF" attach $target -v -o "$T/p" -f 'tr_*' -f 'cs_*' --ready-file "$T/ready" 2>"$T/p.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/p.err" >&2; fail "attach never became ready"; }
during=$(text_diff $target "$CS")
[ "$during" -gt 0 ] || fail "-p: no redirected call in the text during the session"
kill -INT $rec
wait $rec || { cat "$T/p.err" >&2; fail "attach (default) failed"; }
assert_contains "$T/p.err" "^atftrace record: [1-9][0-9]* call sites redirected$" "-p: call sites by default"
no_trampolines "$T/p.err" "-p: the default wrote an entry trampoline or armed the guard"
assert_eq 0 "$(text_diff $target "$CS")" "-p: bytes of the text that differ from the file after the session"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"
assert_contains "$T/serve.out" "^served [1-9][0-9]*$" "the served target's count"

# ---- -p, a child forked during the session: its inherited calls written back at the end too -----
# (bash, every function of it traced; the child is a subshell looping on builtins: bash's image)
mkfifo "$T/go" "$T/idle"
bash -c 'read -r _ <"$1"; ( while [ ! -e "$2" ]; do read -r -t 0.05 _ <>"$3" || :; done ) & echo $! >"$4"; wait' \
	_ "$T/go" "$T/stop" "$T/idle" "$T/child" &
shell=$!
EXIT_PIDS+=($shell)
"$ATF" record -v -p $shell -o "$T/fk" --ready-file "$T/fk.ready" 2>"$T/fk.err" &
rec=$!
wait_for "$T/fk.err" "^atftrace record: [1-9][0-9]* call sites redirected$" "-p bash: call sites by default"
timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.05; done' _ "$T/fk.ready" || fail "-p bash never became ready"
echo go >"$T/go"
timeout 60 bash -c 'until [ -s "$1" ]; do sleep 0.05; done' _ "$T/child" || fail "the shell never forked its child"
child=$(cat "$T/child")
EXIT_PIDS+=($child)
BASH_BIN=$(readlink -f /bin/bash)
[ "$(text_diff $child "$BASH_BIN")" -gt 0 ] || fail "the forked child has no redirected call during the session"
kill -INT $rec
wait $rec || { cat "$T/fk.err" >&2; fail "record -p bash failed"; }
assert_contains "$T/fk.err" "call sites inherited by 1 forked process written back" "-v: the child's calls written back"
assert_eq 0 "$(text_diff $child "$BASH_BIN")" "the forked child: bytes of the text that differ from the file after the session"
assert_eq 0 "$(text_diff $shell "$BASH_BIN")" "the shell: bytes of the text that differ from the file after the session"
touch "$T/stop"
wait $shell || fail "the shell failed"

# ---- -p on a process a running session redirected: plain probes, and the first hands back ----
mkfifo "$T/two.cmd" "$T/two.out" "$T/A.ready" "$T/B.ready"
"$TARGETS/attach_loop" "$T/two.cmd" >"$T/two.out" &
loop=$!
exec 4<"$T/two.out"
read -r -t 60 -u 4 _ _ || fail "no pid from attach_loop"
exec 3>"$T/two.cmd"
"$ATF" record -p $loop -o "$T/A" -f loop_wait --ready-file "$T/A.ready" 2>"$T/A.err" &
recA=$!
timeout 60 cat "$T/A.ready" >/dev/null || { cat "$T/A.err" >&2; fail "session A never became ready"; }
"$ATF" record -v -p $loop -o "$T/B" -f loop_wait --ready-file "$T/B.ready" 2>"$T/B.err" &
recB=$!
timeout 60 cat "$T/B.ready" >/dev/null || { cat "$T/B.err" >&2; fail "session B never became ready"; }
assert_contains "$T/B.err" "^atftrace record: process $loop has the call-site stubs or trampolines of a running atftrace session \(process [0-9]+\): plain probes$" \
	"B: plain probes beside A"
if grep -q "call sites\? redirected" "$T/B.err"; then fail "B redirected calls beside A"; fi
wait_for "$T/A.err" "^atftrace record: loop_wait \(attach_loop\) handed back" "A hands loop_wait back to B's probe"
echo w >&3
read -r -t 60 -u 4 line && [ "$line" = waiting ] || fail "attach_loop did not enter loop_wait: '$line'"
echo go >&3
read -r -t 60 -u 4 line && [ "$line" = "done w" ] || fail "attach_loop did not return: '$line'"
kill -INT $recB $recA
wait $recB || { cat "$T/B.err" >&2; fail "session B failed"; }
wait $recA || { cat "$T/A.err" >&2; fail "session A failed"; }
echo q >&3
exec 3>&- 4<&-
wait $loop || fail "attach_loop failed"
for s in A B; do
	"$TOOLS/record_stats" "$T/$s" >"$T/$s.stats"
	assert_eq "1 1" "$(awk '$1 == "process" { print $8, $10 }' "$T/$s.stats")" "$s: calls and returns"
done

# ---- --trampolines: entry trampolines and their guard --------------------------------------------
"$ATF" record --trampolines -v -o "$T/tr" -f 'tr_*' -f 'cs_*' -- "$CS" all $N >"$T/tr.out" 2>"$T/tr.err" \
	|| { cat "$T/tr.err" >&2; fail "record --trampolines failed"; }
assert_contains "$T/tr.err" "^atftrace record: [1-9][0-9]* functions? entered through trampolines$" \
	"--trampolines: entry trampolines"
assert_contains "$T/tr.err" "registration guard on the" "--trampolines: the guard armed"
if grep -q "call sites\? redirected" "$T/tr.err"; then fail "--trampolines redirected call sites"; fi
cmp -s "$T/plain.out" "$T/tr.out" || fail "--trampolines: the output differs from the untraced run's"

# ---- -a: plain probes unless --call-sites -------------------------------------------------------
"$ATF" record -a -v -o "$T/all" -f "$CS:tr_sub" --duration 0.3 2>"$T/all.err" \
	|| { cat "$T/all.err" >&2; fail "record -a failed"; }
if grep -q "call sites\? redirected\|process\(es\)\? redirected" "$T/all.err"; then fail "-a redirected calls without --call-sites"; fi
no_trampolines "$T/all.err" "-a: an entry trampoline or the guard"
echo "ok: call sites by default (launched and -p, text the file's after), --trampolines on request, -a plain"
