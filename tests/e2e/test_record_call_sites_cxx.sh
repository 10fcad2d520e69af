#!/usr/bin/env bash
# record --call-sites in a process that maps a C++ unwinder (bpf/site_unwind.bpf.h): a throw
# unwinds through frames entered through call-site stubs, whose return address is the stub's
# return point (its `call R_f`). The unwind hooks give each such frame its call site's return
# address at the raise and the stub's return point back at the catch for the frames still alive. On tests/targets/cxx_sites (cs_*:
# mov-first functions in assembly, so their direct calls are redirected; a throw through
# cs_a -> cs_b -> cs_c caught in the round, one through cs_m -> cx_catcher -> cs_b -> cs_c
# caught in cx_catcher, cs_m living on), with 1 thread, 4 threads, and a thread blocked inside
# a redirected call while the main thread throws:
#   - the sites are redirected (the recorder's count) and the calls take the stubs (cs_ra sees
#     a return address outside the program's text: every one of its calls);
#   - the target's output is the untraced run's, and it exits 0 (no std::terminate);
#   - the same calls, parents and unwound frames as plain probes (--no-trampolines), and the
#     exact numbers: every thrown-through frame closed as unwound, cs_m always returning, the
#     catch's parent cs_m with its children cs_b (unwound) and cs_after (returned);
#   - every fix-up written (none failed);
#   - with a record-time filter (-D 2), which hides calls from the shadow stack the hooks read,
#     a C++ process keeps plain probes, and one line says why;
#   - record -p: a thread inside a redirected call when the session ends (by SIGINT, or the
#     recorder's kill -9) throws through that frame after it, and the throw is caught; the text
#     is the file's again.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
CX=$TARGETS/cxx_sites
[ -x "$CX" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/atf_raw" ] && [ -x "$TOOLS/record_stats" ] || fail "build first: make OUTPUT=$OUTPUT tools"
N=200           # rounds per thread, a multiple of 4: cx_raise throws in 3 of 4
THROWS=$((3 * N / 4))

# run NAME STUBS MODE-ARGS...: untraced, --call-sites and --no-trampolines runs; checks output,
# exit status, verify, redirections, STUBS calls of cs_ra through a stub; leaves
# $T/NAME.{cs,pl}.{sum,stats}
run() {
	local name=$1 want=$2
	shift 2
	"$CX" "$@" >"$T/$name.out" 2>/dev/null || fail "$name: the untraced run failed"
	"$ATF" record --call-sites -v -o "$T/$name.cs" -f 'cs_*' -- "$CX" "$@" >"$T/$name.cs.out" \
		2>"$T/$name.cs.err" || { cat "$T/$name.cs.err" >&2; fail "$name: record --call-sites failed"; }
	"$ATF" record --no-trampolines -v -o "$T/$name.pl" -f 'cs_*' -- "$CX" "$@" >"$T/$name.pl.out" \
		2>"$T/$name.pl.err" || { cat "$T/$name.pl.err" >&2; fail "$name: record --no-trampolines failed"; }
	# cs_after (mov; ret) too: a stub's body moves only the first instruction
	assert_contains "$T/$name.cs.err" "cxx_sites: 9 call sites of 7 functions redirected" \
		"$name: the redirected calls of cs_a, cs_b (2), cs_c, cs_m, cs_ra, cs_hold (2), cs_after"
	if grep -q "no call sites redirected\|terminate\|unwind fix-up within" "$T/$name.cs.err"; then
		fail "$name: $(grep "no call sites redirected\|terminate\|unwind fix-up within" "$T/$name.cs.err")"
	fi
	assert_contains "$T/$name.cs.err" "C\+\+ unwind fix-ups: [1-9][0-9]* \([1-9][0-9]* stack slots written, 0 changed meanwhile, 0 failed\)" \
		"$name: the fix-ups"
	cmp -s "$T/$name.out" "$T/$name.cs.out" \
		|| fail "$name: the output differs from the untraced run's: $(diff "$T/$name.out" "$T/$name.cs.out" | head -5)"
	cmp -s "$T/$name.out" "$T/$name.pl.out" || fail "$name: --no-trampolines changed the output"
	assert_contains "$T/$name.cs.err" "^ra_outside $want in /memfd:atftrace-trampolines" \
		"$name: every call of cs_ra through a stub (its return address in the stubs' memfd)"
	if grep -q "^ra_outside .* /memfd:atftrace" "$T/$name.pl.err"; then
		fail "$name: --no-trampolines: $(grep '^ra_outside' "$T/$name.pl.err")"
	fi
	for s in cs pl; do
		"$ATF" verify "$T/$name.$s" >/dev/null || fail "$name: verify the $s session"
		call_summary "$T/$name.$s" >"$T/$name.$s.sum"
		"$TOOLS/record_stats" "$T/$name.$s" >"$T/$name.$s.stats"
	done
	diff "$T/$name.pl.sum" "$T/$name.cs.sum" >&2 \
		|| fail "$name: calls, parents or unwound frames differ between --call-sites and plain probes"
}
# count NAME KIND FUNC: calls, returns or exceptions of FUNC in the --call-sites session
count() {
	awk -v k="$2" -v f="$3" '$1 == k && $3 == f { n += $4 } END { print n + 0 }' "$T/$1.cs.stats"
}
# check_rounds NAME R X: R rounds (all threads), X of them thrown through cs_a: the exact numbers
check_rounds() {
	local name=$1 r=$2 x=$3
	# record_stats lists calls and exceptions; with nothing unbalanced the rest returned
	assert_eq "$r $x $((2 * r)) $((2 * x)) $((2 * r)) $((2 * x)) $r 0 $r 0 $r 0" \
		"$(for k in "call cs_a" "exception cs_a" "call cs_b" "exception cs_b" "call cs_c" \
			"exception cs_c" "call cs_m" "exception cs_m" "call cs_after" \
			"exception cs_after" "call cs_ra" "exception cs_ra"; do
			# shellcheck disable=SC2086
			count "$name" $k; done | paste -sd' ')" \
		"$name: calls and exceptions of cs_a, cs_b, cs_c, cs_m, cs_after, cs_ra"
	assert_eq "$((5 * x))" "$(awk '$1 == "process" { print $12 }' "$T/$name.cs.stats")" \
		"$name: frames closed as unwound"
	assert_eq "0 0" "$(awk '$1 == "process" { print $16 } $1 == "unbalanced" { print $3 }' \
		"$T/$name.cs.stats" | paste -sd' ')" "$name: lost events, unbalanced frames"
	# the catch's parent: cs_m lives on through the catch in cx_catcher (not traced), and its
	# children are cs_b (thrown through, then caught) and cs_after (after the catch)
	assert_eq "$r cs_m|$r cs_b|$r cs_c|$r cs_after" "$("$ATF" graph "$T/$name.cs" cs_m | awk 'NR > 2 {
		sub(/ \(unwound\)$/, ""); n = $NF; sub(/^[^a-z_]*/, "", n); print $5, n }' | paste -sd'|')" \
		"$name: the call graph below cs_m"
}

# ---- one thread: N rounds ----------------------------------------------------------------------
run one $N all $N
check_rounds one $N $THROWS

# ---- four threads at once, N rounds each ---------------------------------------------------------
run four $((4 * N)) threads 4 $N
check_rounds four $((4 * N)) $((4 * THROWS))

# ---- a thread blocked inside a redirected call (cs_hold) while the main thread throws N times ----
# (the holding thread then does two rounds itself, the second one thrown through)
run busy $((N + 2)) busy $N
assert_eq "1 0" "$(for k in call exception; do count busy $k cs_hold; done | paste -sd' ')" \
	"busy: calls and exceptions of cs_hold (it returned)"
check_rounds busy $((N + 2)) $((THROWS + 1))
# ---- record-time filters hide calls from the shadow stack the hooks read: plain probes then --
"$ATF" record --call-sites -v -D 2 -o "$T/d2" -f 'cs_*' -- "$CX" all 8 >"$T/d2.out" 2>"$T/d2.err" \
	|| { cat "$T/d2.err" >&2; fail "record --call-sites -D 2 failed"; }
assert_contains "$T/d2.err" "^atftrace record: call sites with record-time filters: a C\+\+ process keeps plain probes" \
	"-D 2: the line saying why"
assert_contains "$T/d2.err" "no call sites redirected: it maps a C\+\+ unwinder" "-D 2: nothing redirected"
"$CX" all 8 >"$T/d2.plain" 2>/dev/null
cmp -s "$T/d2.plain" "$T/d2.out" || fail "-D 2: the output differs from the untraced run's"

# ---- record -p: a frame entered through a stub during the session, thrown through after it ----
# after SIGNAL: the session ends by SIGNAL to the recorder: INT (its own end gives the frame its
# call site's return address: no hook is left to do it then), or KILL (its watchdog writes the
# calls back and does the same, as `atftrace restore -p` would)
after() {
	local sig=$1 target rec wd
	rm -f "$T/rdy"
	mkfifo "$T/rdy"
	"$CX" after >"$T/after.out" 2>"$T/after.err" &
	target=$!
	wait_for "$T/after.out" "^ready$" "after $sig: the target's start"
	"$ATF" record --call-sites -v -p $target -o "$T/after_$sig.cs" -f 'cs_*' --ready-file "$T/rdy" \
		2>"$T/after_$sig.err" &
	rec=$!
	timeout 60 cat "$T/rdy" >/dev/null || { cat "$T/after_$sig.err" >&2; fail "after $sig: record -p never became ready"; }
	assert_contains "$T/after_$sig.err" "cxx_sites: 9 call sites of 7 functions redirected" "after $sig: the redirected calls"
	wd=$(awk '/watchdog [0-9]+ resumes/ { print $3 }' "$T/after_$sig.err")
	[ -n "$wd" ] || fail "after $sig: the recorder did not name its watchdog"
	kill -USR1 $target
	wait_for "$T/after.out" "^inside$" "after $sig: the thread inside cs_hold"
	[ "$(text_diff $target "$CX")" -gt 0 ] || fail "after $sig: no redirected call in the text during the session"
	kill -$sig $rec
	if { wait $rec; } 2>/dev/null; then
		[ "$sig" = INT ] || fail "after $sig: the recorder was not killed"
	else
		[ "$sig" = KILL ] || { cat "$T/after_$sig.err" >&2; fail "after $sig: record -p failed"; }
	fi
	# the watchdog acts when the recorder is gone, then exits
	timeout 60 bash -c "while kill -0 $wd 2>/dev/null; do sleep 0.05; done" \
		|| fail "after $sig: the watchdog $wd did not end"
	assert_eq 0 "$(text_diff $target "$CX")" "after $sig: bytes of the text that differ from the file"
	kill -USR2 $target
	wait $target || fail "after $sig: the target failed (exit $?): $(cat "$T/after.out" "$T/after.err")"
	assert_contains "$T/after.out" "^after: caught 1$" "after $sig: the throw through cs_hold after the session"
}
after INT
"$ATF" verify "$T/after_INT.cs" >/dev/null || fail "after INT: verify"
after KILL

echo "ok: --call-sites in a C++ process: $((2 * THROWS)) throws per thread through redirected calls, exact as plain probes"
