#!/usr/bin/env bash
# record -p on a running C++ program whose threads keep throwing through traced frames, then
# detach and let it go on throwing. The target must never notice: no std::terminate while the
# probes attach (the unwind hooks must be in place before any function probe can fire), none
# after the detach (every frame still open then gets its real return address back, so a throw
# through it later unwinds), and a frame open at the detach returns to its real caller. Every
# step waits on the target's own answers on a fifo (tests/targets/cxx_attach_throw.cpp).
source "$(dirname "$0")/lib.sh"
need_bpf
N=200           # throws waited for while recording, and again after the detach

mkfifo "$T/cmd" "$T/out" "$T/ready"
"$TARGETS/cxx_attach_throw" "$T/cmd" 4 >"$T/out" &
target=$!
exec 4<"$T/out"
read -r -u 4 word pid || fail "no pid from cxx_attach_throw"
assert_eq "pid $target" "$word $pid" "first line"
exec 3>"$T/cmd"
# ask: send a command, read its one-line answer (empty when the target died)
ask() {
	echo "$1" >&3 || true
	local line=""
	read -r -u 4 line || true
	echo "$line"
}
alive() {
	kill -0 "$target" 2>/dev/null && return 0
	local st=0
	wait "$target" || st=$?
	fail "$1: the target died (status $st)"
}

assert_eq "throws" "$(ask "wait 20" | cut -d' ' -f1)" "throws before the attach"
"$ATF" record -p "$target" -o "$T/s" -f 'thrower_*' -f 'held_*' -v \
	--ready-file "$T/ready" 2>"$T/err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/err" >&2; fail "the recorder was never ready"; }
alive "attach"
assert_eq "holding" "$(ask hold)" "holder inside held_inner while traced"
assert_eq "throws" "$(ask "wait $N" | cut -d' ' -f1)" "throws while recording"
alive "recording"
kill -INT $rec
wait $rec || { cat "$T/err" >&2; fail "record -p failed"; }
alive "detach"
assert_eq "throws" "$(ask "wait $N" | cut -d' ' -f1)" "throws after the detach"

# Another recording ends while this target still has the kernel's (now unused) return instances
# of its open frames: that recorder must look at its own process only, stop nothing, and exit 0.
mkfifo "$T/lcmd" "$T/lout" "$T/lready"
"$TARGETS/attach_loop" "$T/lcmd" >"$T/lout" &
loop=$!
exec 5<"$T/lout"
read -r -u 5 _ _ || fail "no pid from attach_loop"
exec 6>"$T/lcmd"
"$ATF" record -p "$loop" -o "$T/l" -f loop_work -v --ready-file "$T/lready" 2>"$T/lerr" &
lrec=$!
timeout 60 cat "$T/lready" >/dev/null || { cat "$T/lerr" >&2; fail "the second recorder was never ready"; }
echo 3 >&6
read -r -u 5 line; assert_eq "done 3" "$line" "attach_loop's answer"
kill -INT $lrec
wait $lrec || { cat "$T/lerr" >&2; fail "the second record -p failed"; }
if grep "detach:" "$T/lerr" >&2; then fail "the second recorder stopped threads"; fi
echo q >&6
exec 6>&- 5<&-
wait $loop || fail "attach_loop failed"
alive "another recording's end"
assert_eq "held: returned 41, caught 1, return addresses original" "$(ask release)" \
	"a frame open at the detach: returns, then is thrown through"
echo q >&3
exec 3>&-
read -r -u 4 word c _ t || true
status=0
wait $target || status=$?
assert_eq 0 $status "target exit status"
assert_eq "caught $t" "$word $c" "every throw caught"

# the recorder's own account (-v): every thread stopped once, both open frames put back
if grep -E "cannot|could not|did not|may terminate" "$T/err" >&2; then fail "recorder errors"; fi
put_back="([2-9]|[1-9][0-9]+) return addresses put back"
assert_contains "$T/err" "detach: 6 threads in 1 process stopped for [0-9.]+ ms; $put_back" \
	"detach line (threads: main, 4 workers, the holder; frames: held_outer, held_inner, any thrower_*)"

# the session: the holder's two frames open, every throw's frames closed at its catch except
# those of the (at most 4) throws in flight when the function probes were detached
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
count() { awk -v k="$1" -v f="$2" '$1 == k && index($3, f "(") == 1 { print $4 }' "$T/stats"; }
read -r _ _ _ threads _ _ _ calls _ returns _ _ _ _ _ lost _ <<<"$(grep '^process ' "$T/stats")"
assert_eq "5 0 0" "$threads $returns $lost" "threads returns lost"
assert_eq "1 1" "$(count call held_outer) $(count call held_inner)" "calls of held_outer held_inner"
open=2
for f in thrower_a thrower_b thrower_c; do
	fc=$(count call $f) fe=$(count exception $f)
	[ "$fc" -ge "$N" ] || fail "calls of $f: $fc, expected at least $N"
	[ $((fc - fe)) -ge 0 ] && [ $((fc - fe)) -le 4 ] || fail "$f: $fc calls, $fe exceptions"
	open=$((open + fc - fe))
done
assert_eq $open "$(awk '$1 == "unbalanced" { print $3 }' "$T/stats")" "frames left open"
echo "ok"
