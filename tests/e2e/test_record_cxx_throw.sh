#!/usr/bin/env bash
# C++ exceptions thrown through traced frames. A uretprobe puts the kernel's trampoline in each
# traced frame's return-address slot, and the unwinder cannot pass it; the recorder restores the
# slots while the thread is stopped at the raise and re-arms the surviving frames at the catch
# (bpf/atftrace.bpf.c, user/record/recorder_unwind.c). Every case checks the target's own output (the
# catch ran), its exit status 0, exact event counts, a balanced tree and `atftrace verify`.
source "$(dirname "$0")/lib.sh"
need_bpf
N=3

# run_record NAME ARGS... -- CMD: record into $T/NAME; the target's stdout goes to $T/NAME.out
run_record() {
	local name=$1
	shift
	"$ATF" record -o "$T/$name" "$@" >"$T/$name.out" 2>"$T/$name.err"
}
# check_recorded NAME: the target exited 0, every fix-up worked, the session verifies; stats
check_recorded() {
	if grep -q "the target" "$T/$1.err"; then fail "$1: $(grep 'the target' "$T/$1.err")"; fi
	if grep -q "unwind" "$T/$1.err"; then fail "$1: $(grep 'unwind' "$T/$1.err")"; fi
	"$ATF" verify "$T/$1" >/dev/null || fail "$1: verify"
	"$TOOLS/record_stats" "$T/$1" >"$T/$1.stats"
}
record() {
	run_record "$@" || { cat "$T/$1.err" >&2; fail "$1: record failed"; }
	check_recorded "$1"
}
# totals NAME: "calls returns exceptions lost unbalanced" of the (single) process
totals() {
	local calls returns exc lost
	read -r _ _ _ _ _ _ _ calls _ returns _ exc _ _ _ lost _ <<<"$(grep '^process ' "$T/$1.stats")"
	echo "$calls $returns $exc $lost $(awk '$1 == "unbalanced" { print $3 }' "$T/$1.stats")"
}
# count NAME KIND FUNC: CALL or EXCEPTION events of FUNC (demangled name prefix)
count() {
	awk -v k="$2" -v f="$3" '$1 == k && index($3, f "(") == 1 { print $4 }' "$T/$1.stats"
}

# 1. Only main traced: the throw crosses no traced frame, but main's frame is pending on the
#    thread, so each throw is held at the raise and main is re-armed at the catch.
record m -f main -- "$TARGETS/cxx_throw" $N
assert_eq "caught $N of $N" "$(cat "$T/m.out")" "-f main: target output"
assert_eq "1 1 0 0 0" "$(totals m)" "-f main: calls returns exceptions lost unbalanced"

# 2. Thrown through three traced frames, caught in main: one EXCEPTION per frame at the catch,
#    innermost first; main's RETURN is still seen. With every link kind the kernel offers.
for link in session multi perf; do
	# an older kernel may lack session (6.12) or multi (6.6) links: record says so, test the rest
	if ! ATFTRACE_LINK=$link run_record "s_$link" -f main -f 'thrower_*' -- "$TARGETS/cxx_throw" $N; then
		grep -q "ATFTRACE_LINK=$link: not supported by this kernel" "$T/s_$link.err" && continue
		cat "$T/s_$link.err" >&2
		fail "$link: record failed"
	fi
	check_recorded "s_$link"
	assert_eq "caught $N of $N" "$(cat "$T/s_$link.out")" "$link: target output"
	for f in thrower_a thrower_b thrower_c; do
		assert_eq $N "$(count "s_$link" call $f)" "$link: calls of $f"
		assert_eq $N "$(count "s_$link" exception $f)" "$link: exceptions of $f"
	done
	assert_eq "$((1 + 3 * N)) 1 $((3 * N)) 0 0" "$(totals "s_$link")" \
		"$link: calls returns exceptions lost unbalanced"
	"$ATF" dump "$T/s_$link" | normalise_dump | sed -n "2,9p" | sed "s/(int)()/(int)/" >"$T/dump"
	cat >"$T/want" <<'W'
      | main() {
      |   thrower_a(int) {
      |     thrower_b(int) {
      |       thrower_c(int) {
<dur> |       } /* thrower_c */ (unwound)
<dur> |     } /* thrower_b */ (unwound)
<dur> |   } /* thrower_a */ (unwound)
      |   thrower_a(int) {
W
	diff -u "$T/want" "$T/dump" >&2 || fail "$link: dump of the first throw differs"
done

# 3. Caught in a traced middle frame: catcher_b and thrower_a_middle survive the catch, get
#    their trampolines back, and their RETURNs are recorded; only thrower_c is unwound.
record mid -f main -f 'thrower_*' -f 'catcher_*' -- "$TARGETS/cxx_throw" $N middle
assert_eq "caught $N of $N" "$(cat "$T/mid.out")" "middle: target output"
assert_eq "$((1 + 3 * N)) $((1 + 2 * N)) $N 0 0" "$(totals mid)" \
	"middle: calls returns exceptions lost unbalanced"
assert_eq $N "$(count mid exception thrower_c)" "middle: exceptions of thrower_c"
"$ATF" dump "$T/mid" | normalise_dump | sed -n "2,9p" >"$T/dump"
cat >"$T/want" <<'W'
      | main() {
      |   thrower_a_middle(int) {
      |     catcher_b(int) {
      |       thrower_c(int) {
<dur> |       } /* thrower_c */ (unwound)
<dur> |     } /* catcher_b */
<dur> |   } /* thrower_a_middle */
      |   thrower_a_middle(int) {
W
diff -u "$T/want" "$T/dump" >&2 || fail "middle: dump of the first throw differs"

# 4. Eight threads released together, 100 throws each: raises and catches in several threads at
#    once. A SIGCONT discards every pending stop of the process, so resuming one thread's hold
#    before the other threads' fix-ups are written kills the target (it did, every run).
M=100 K=8
record thr -f 'thrower_*' -f 'worker*' -- "$TARGETS/cxx_throw" $M threads $K
assert_eq "caught $((K * M)) of $((K * M))" "$(cat "$T/thr.out")" "threads: target output"
assert_eq "$((K + 3 * K * M)) $K $((3 * K * M)) 0 0" "$(totals thr)" \
	"threads: calls returns exceptions lost unbalanced"
for f in thrower_a thrower_b thrower_c; do
	assert_eq $((K * M)) "$(count thr exception $f)" "threads: exceptions of $f"
done
assert_eq $K "$(grep -c '^thread ' "$T/thr.stats")" "threads: thread files"

# 5. pthread_exit through traced frames: a forced unwind (_Unwind_ForcedUnwind) with no catch.
#    The threads end cleanly; their three frames stay open (nothing closes them: no catch).
record ex -f 'exiter_*' -- "$TARGETS/cxx_throw" $N exit
assert_eq "exited $N of $N" "$(cat "$T/ex.out")" "exit: target output"
assert_eq "$((3 * N)) 0 0 0 $((3 * N))" "$(totals ex)" "exit: calls returns exceptions lost unbalanced"
echo "ok"
