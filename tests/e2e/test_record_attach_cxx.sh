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
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/err" >&2; fail "the recorder never became ready"; }
alive "attach"
assert_eq "holding" "$(ask hold)" "holder inside held_inner while traced"
assert_eq "throws" "$(ask "wait $N" | cut -d' ' -f1)" "throws while recording"
alive "recording"
kill -INT $rec
wait $rec || { cat "$T/err" >&2; fail "record -p failed"; }
alive "detach"
assert_eq "throws" "$(ask "wait $N" | cut -d' ' -f1)" "throws after the detach"
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
assert_contains "$T/err" "detach: 6 threads of 1 processes stopped for [0-9.]+ ms; ([2-9]|[1-9][0-9]+) return addresses put back" \
	"detach line (threads: main, 4 workers, the holder; frames: held_outer, held_inner, and any thrower_* open then)"
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
calls=$(awk '$1 == "call" && index($3, "thrower_c(") == 1 { print $4 }' "$T/stats")
[ "${calls:-0}" -ge "$N" ] || fail "recorded calls of thrower_c: ${calls:-0}, expected at least $N"
echo "ok"
