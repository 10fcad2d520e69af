#!/usr/bin/env bash
# Entry trampolines (record --trampolines; user/probe/trampoline*.c) on tests/targets/tramp_sites, whose functions
# start with each kind of first instruction and check their own results (a wrongly moved
# instruction makes the target exit 1):
#   - list-functions and record -v say which functions get one, and why the others do not
#     (a 4-byte function, a loop that branches back into its first bytes, a nop5 site);
#   - exact counts, and the same dump as --no-trampolines; the same detail registers;
#   - fork while patched, with and without --follow-fork;
#   - record -p: the text is patched while recording and byte-for-byte the file's after it;
#   - record -p while threads run hot in patched functions: exact counts from a mark on;
#   - C++ throws through patched frames.
source "$(dirname "$0")/lib.sh"
need_bpf
TS=$TARGETS/tramp_sites
# background targets and sessions never outlive the test, whatever fails
# (jobs -p: only this shell's background jobs still running, never a reused pid)
cleanup() { local j; for j in $(jobs -p); do kill -KILL "$j" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
[ -x "$TS" ] || fail "build first: make OUTPUT=$OUTPUT targets"
N=500

# ---- which functions, and why not ------------------------------------------------------------
"$ATF" list-functions -f 'tr_*' "$TS" >"$T/list"
for f in tr_lea tr_mov tr_sub tr_rip tr_jcc tr_endbr; do
	assert_contains "$T/list" " trampoline +selected +$f\$" "list-functions: $f gets a trampoline"
done
assert_contains "$T/list" " probe:short +selected +tr_short\$" "list-functions: tr_short is too short"
assert_contains "$T/list" " probe:branch-in +selected +tr_loop\$" "list-functions: tr_loop loops into its first bytes"
assert_contains "$T/list" " probe:nop5 +selected +tr_nop5\$" "list-functions: tr_nop5 is a nop5 site"

# ---- launched: exact counts, the same events as plain probes ---------------------------------
"$ATF" record --trampolines -v -o "$T/on" -f 'tr_*' -x tr_nop5 -- "$TS" all $N 2>"$T/on.err" \
	|| { cat "$T/on.err" >&2; fail "record with trampolines"; }
if grep -q "the target" "$T/on.err"; then fail "$(grep 'the target' "$T/on.err")"; fi
assert_contains "$T/on.err" "tramp_sites: 7 functions through trampolines, 0 at nop5 sites, 3 short, 1 branch-in$" "-v: trampolines and reasons"
assert_contains "$T/on.err" ": tr_loop: plain probe \(branch-in\)$" "-v: tr_loop keeps its probe"
"$ATF" verify "$T/on" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/on" >"$T/on.stats"
for f in tr_lea tr_mov tr_sub tr_rip tr_endbr tr_short tr_loop; do
	assert_eq $N "$(awk -v f=$f '$1 == "call" && $3 == f { print $4 }' "$T/on.stats")" "calls of $f"
done
assert_eq $((2 * N)) "$(awk '$1 == "call" && $3 == "tr_jcc" { print $4 }' "$T/on.stats")" "calls of tr_jcc"
assert_eq "unbalanced 0" "$(awk '$1 == "unbalanced" { print $1, $3 }' "$T/on.stats")" "balanced"
"$ATF" record -o "$T/off" --no-trampolines -f 'tr_*' -x tr_nop5 -- "$TS" all $N 2>"$T/off.err" \
	|| { cat "$T/off.err" >&2; fail "record --no-trampolines"; }
"$ATF" dump "$T/on" | normalise_dump >"$T/on.dump"
"$ATF" dump "$T/off" | normalise_dump >"$T/off.dump"
cmp -s "$T/on.dump" "$T/off.dump" || { diff "$T/on.dump" "$T/off.dump" | head >&2; fail "dumps differ"; }
# on with --trampolines only (call sites are the default: test_record_default_mode.sh), off with
# --no-trampolines; never with -a
"$ATF" record -v -o "$T/def" -f 'tr_*' -- "$TS" all 1 2>"$T/def.err" || { cat "$T/def.err" >&2; fail "record (default)"; }
if grep -q "through trampolines" "$T/def.err"; then fail "trampolines without --trampolines"; fi
"$ATF" record -v -o "$T/noT" --no-trampolines -f 'tr_*' -- "$TS" all 1 2>"$T/noT.err" || { cat "$T/noT.err" >&2; fail "record --no-trampolines"; }
if grep -q "through trampolines" "$T/noT.err"; then fail "trampolines with --no-trampolines"; fi
if "$ATF" record -a --trampolines -f "$TS:tr_*" --duration 1 -o "$T/a" 2>"$T/a.err"; then fail "-a --trampolines accepted"; fi
assert_contains "$T/a.err" "--trampolines patches one process's text: not with -a" "-a --trampolines refused"

# ---- detail: registers and stack words at a patched entry are those at the function -----------
# (no ASLR, so both runs see the same addresses)
for m in on off; do
	opt=--trampolines; [ $m = off ] && opt=--no-trampolines
	setarch -R "$ATF" record $opt --detail=always -o "$T/d$m" -f tr_sub -f tr_endbr -f tr_rip \
		-- "$TS" all 20 2>"$T/d$m.err" || { cat "$T/d$m.err" >&2; fail "detail record $m"; }
	"$ATF" dump "$T/d$m" | normalise_dump >"$T/d$m.dump"
done
assert_eq 60 "$(grep -c '^ *args: rdi=' "$T/don.dump")" "detail records at patched entries"
cmp -s "$T/don.dump" "$T/doff.dump" || { diff "$T/don.dump" "$T/doff.dump" | head >&2; fail "detail differs"; }

# ---- fork while patched --------------------------------------------------------------------------
"$ATF" record --trampolines -o "$T/fork" -f 'tr_*' -x tr_nop5 -- "$TS" fork 100 2>"$T/fork.err" \
	|| { cat "$T/fork.err" >&2; fail "record fork"; }
if grep -q "the target" "$T/fork.err"; then fail "fork: $(grep 'the target' "$T/fork.err")"; fi
# with tr_nop5 too: its site, optimised by the kernel in the parent, is given its int3 back in
# the child; the trampolines' own sites are emulated nops, never optimised: nothing to give back
"$ATF" record --trampolines -v -o "$T/fork5" -f 'tr_*' -- "$TS" fork 100 2>"$T/fork5.err" \
	|| { cat "$T/fork5.err" >&2; fail "record fork (with tr_nop5)"; }
if grep -q "the target" "$T/fork5.err"; then fail "fork with tr_nop5: $(grep 'the target' "$T/fork5.err")"; fi
assert_contains "$T/fork5.err" "forked [0-9]+: 1 probe sites given back their int3" "the child's optimised site"
"$ATF" record --trampolines --follow-fork -o "$T/ff" -f 'tr_*' -x tr_nop5 -- "$TS" fork 100 2>"$T/ff.err" \
	|| { cat "$T/ff.err" >&2; fail "record --follow-fork"; }
if grep -q "the target" "$T/ff.err"; then fail "follow-fork: $(grep 'the target' "$T/ff.err")"; fi
"$TOOLS/record_stats" "$T/ff" >"$T/ff.stats"
assert_eq "100 200" "$(awk '$1 == "call" && $3 == "tr_sub" { print $4 }' "$T/ff.stats" | sort -n | tr '\n' ' ' | sed 's/ $//')" "tr_sub calls in the child and the parent"

# ---- record -p: patched while recording, the file's text again afterwards ----------------------
mkfifo "$T/served" "$T/ready"
"$TS" serve "$T/served" >"$T/serve.out" &
target=$!
timeout 120 cat "$T/served" >/dev/null || fail "nothing came through $T/served in 120 s"
assert_eq 0 "$(text_diff $target "$TS")" "text before the attach"
"$ATF" record --trampolines -p $target -v -o "$T/p" -f 'tr_*' --ready-file "$T/ready" 2>"$T/p.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/p.err" >&2; fail "record -p never became ready"; }
patched=$(text_diff $target "$TS")
[ "$patched" -ge 6 ] || fail "text while recording: $patched bytes differ from the file (6 jmps expected)"
grep -q 'memfd:atftrace-trampolines' /proc/$target/maps || fail "no trampoline mapping in the target"
# a second session on the same process leaves the rewritten functions alone (a probe over the
# jmp would crash the target) and traces the others
"$ATF" record -p $target -o "$T/p2" -f 'tr_*' --duration 0.5 2>"$T/p2.err" \
	|| { cat "$T/p2.err" >&2; fail "a second session on a patched process"; }
# as many as the first session patched (a function that a thread was inside at its attach is not)
npatched=$(sed -n 's/.*tramp_sites: \([0-9]*\) functions\? through trampolines.*/\1/p' "$T/p.err")
[ "${npatched:-0}" -ge 6 ] || fail "the first session patched only ${npatched:-no} functions"
assert_contains "$T/p2.err" "tramp_sites: $npatched functions rewritten in process $target by another tool" "the second session leaves the patched functions alone"
kill -0 $target || fail "the target died under two sessions"
# so does a system-wide session: its probes would reach this process's rewritten text too
"$ATF" record -a -o "$T/a2" -f "$TS:tr_*" --duration 0.5 2>"$T/a2.err" \
	|| { cat "$T/a2.err" >&2; fail "a system-wide session beside a patched process"; }
assert_contains "$T/a2.err" "tramp_sites: $npatched functions rewritten in process $target by another tool" "-a leaves the patched functions alone"
kill -0 $target || fail "the target died under a system-wide session"
kill -INT $rec
wait $rec || { cat "$T/p.err" >&2; fail "record -p failed"; }
assert_eq 0 "$(text_diff $target "$TS")" "text after the recording"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"
"$ATF" verify "$T/p" >/dev/null || fail "verify -p"
"$TOOLS/record_stats" "$T/p" >"$T/p.stats"
[ "$(awk '$1 == "call" && $3 == "tr_sub" { print $4 }' "$T/p.stats")" -gt 0 ] || fail "no tr_sub calls recorded with -p"

# ---- a process under a seccomp filter: no syscall is run inside it ---------------------------
rm -f "$T/served" "$T/ready"; mkfifo "$T/served" "$T/ready"
"$TS" sandboxed "$T/served" >"$T/sandboxed.out" &
target=$!
timeout 120 cat "$T/served" >/dev/null || fail "nothing came through $T/served in 120 s"
"$ATF" record --trampolines -p $target -v -o "$T/sb" -f 'tr_*' --ready-file "$T/ready" 2>"$T/sb.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/sb.err" >&2; fail "record -p (seccomp) never became ready"; }
kill -INT $rec
wait $rec || { cat "$T/sb.err" >&2; fail "record -p (seccomp) failed"; }
assert_contains "$T/sb.err" ": tr_lea: plain probe \(seccomp\)$" "a sandboxed process keeps plain probes"
kill -TERM $target
wait $target || fail "the sandboxed target failed (killed by its filter?)"

# ---- record -p while threads run hot in patched functions ------------------------------------
NT=4 K=3000
rm -f "$T/ready"; mkfifo "$T/hot" "$T/ready"
"$TS" threads $NT $K "$T/hot" &
target=$!
timeout 120 cat "$T/hot" >/dev/null || fail "nothing came through $T/hot in 120 s"         # every thread is calling tr_sub and tr_mov
"$ATF" record --trampolines -p $target -v -o "$T/h" -f 'tr_*' --ready-file "$T/ready" 2>"$T/h.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/h.err" >&2; fail "record -p (threads) never became ready"; }
kill -USR1 $target              # each thread: tr_mark, then exactly K of each, then tr_done
wait $target || fail "the threaded target failed"
wait $rec || { cat "$T/h.err" >&2; fail "record -p (threads) failed"; }
assert_contains "$T/h.err" "tramp_sites: [1-9][0-9]* functions? through trampolines" "-v: trampolines with -p"
"$ATF" verify "$T/h" >/dev/null || fail "verify (threads)"
# per thread: the calls between tr_mark and tr_done
mark_window_counts "$T/h" >"$T/h.win"
assert_eq $NT "$(wc -l <"$T/h.win")" "threads that reached the mark"
assert_eq $NT "$(awk -v k=$K '$2 == 1 && $3 == k && $4 == k' "$T/h.win" | wc -l)" "threads with exactly $K calls of each after the mark"
"$TOOLS/record_stats" "$T/h" >"$T/h.stats"
assert_eq "unbalanced 0" "$(awk '$1 == "unbalanced" { print $1, $3 }' "$T/h.stats")" "balanced (threads)"

# ---- another session's probes already on the functions -------------------------------------------
# An -a session puts its int3s into every mapping of tramp_sites, list-functions' own reading of
# the file included: list-functions still sees the file's instructions, and a --trampolines
# recording leaves those functions (their text is not the file's) on plain probes.
rm -f "$T/ready"; mkfifo "$T/ready"
"$ATF" record -a -o "$T/sys" -f "$TS:tr_lea" -f "$TS:tr_sub" --ready-file "$T/ready" 2>"$T/sys.err" &
sys=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/sys.err" >&2; fail "the -a session never became ready"; }
"$ATF" list-functions -f 'tr_*' "$TS" >"$T/list2"
both=0
"$ATF" record --trampolines -v -o "$T/both" -f 'tr_*' -x tr_nop5 -- "$TS" all $N 2>"$T/both.err" || both=$?
kill -INT $sys; wait $sys || { cat "$T/sys.err" >&2; fail "the -a session failed"; }
assert_contains "$T/list2" " single-step +trampoline +selected +tr_lea\$" "list-functions under another session's probes"
[ $both = 0 ] || { cat "$T/both.err" >&2; fail "record under another session's probes"; }
if grep -q "the target" "$T/both.err"; then fail "$(grep 'the target' "$T/both.err")"; fi
assert_contains "$T/both.err" ": tr_lea: plain probe \\(text-differs\\)$" "tr_lea is left to the plain probe"
"$TOOLS/record_stats" "$T/both" >"$T/both.stats"
assert_eq $N "$(awk '$1 == "call" && $3 == "tr_lea" { print $4 }' "$T/both.stats")" "calls of tr_lea under two sessions"

# ---- C++ throws through patched frames -----------------------------------------------------------
CX=$TARGETS/cxx_throw
"$ATF" record --trampolines -v -o "$T/cx" -f main -f 'thrower_*' -- "$CX" 3 >"$T/cx.out" 2>"$T/cx.err" \
	|| { cat "$T/cx.err" >&2; fail "record cxx_throw"; }
if grep -q "the target" "$T/cx.err"; then fail "cxx_throw: $(grep 'the target' "$T/cx.err")"; fi
assert_contains "$T/cx.err" "cxx_throw: [1-9][0-9]* functions? through trampolines" "-v: trampolines in cxx_throw"
"$ATF" record --no-trampolines -o "$T/cxoff" -f main -f 'thrower_*' -- "$CX" 3 >"$T/cxoff.out" 2>"$T/cxoff.err" \
	|| { cat "$T/cxoff.err" >&2; fail "record cxx_throw --no-trampolines"; }
cmp -s "$T/cx.out" "$T/cxoff.out" || fail "cxx_throw printed something else with trampolines"
"$ATF" dump "$T/cx" | normalise_dump >"$T/cx.dump"
"$ATF" dump "$T/cxoff" | normalise_dump >"$T/cxoff.dump"
cmp -s "$T/cx.dump" "$T/cxoff.dump" || { diff "$T/cx.dump" "$T/cxoff.dump" | head >&2; fail "cxx_throw dumps differ"; }
echo "ok"
