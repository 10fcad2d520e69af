#!/usr/bin/env bash
# record -p on a running C++ program whose threads keep throwing through traced frames, then
# detach and let it go on throwing. The target must never notice: no std::terminate while the
# probes attach (the unwind hooks must be in place before any function probe can fire), none
# after the detach (every frame still open then gets its real return address back, so a throw
# through it later unwinds), and a frame open at the detach returns to its real caller. Every
# step waits on the target's own answers on a fifo (tests/targets/cxx_attach_throw.cpp).
# Two rounds: 4 threads throwing every 4 ms on call sites (the default: the frames entered
# through stubs get their call sites' return addresses back with the calls), then 8 threads
# throwing back to back on entry trampolines (--trampolines: the frames open at the detach wait
# on the kernel's return probes), so that the detach's stop often lands while a thread is held
# for an unwind fix-up.
source "$(dirname "$0")/lib.sh"
need_bpf
N=200           # throws waited for while recording, and again after the detach

# ask: send a command to the target, print its one-line answer (empty when the target died)
ask() {
	echo "$1" >&3 || true
	local line=""
	read -r -t 120 -u 4 line || true
	echo "$line"
}
alive() {
	kill -0 "$target" 2>/dev/null && return 0
	local st=0
	wait "$target" || st=$?
	fail "$R: $1: the target died (status $st)"
}

# other_recording: another recording ends while the target still has the kernel's (now unused)
# return instances of its open frames: that recorder must look at its own process only, stop
# nothing, and exit 0.
other_recording() {
	local loop lrec line
	mkfifo "$T/lcmd" "$T/lout" "$T/lready"
	"$TARGETS/attach_loop" "$T/lcmd" >"$T/lout" &
	loop=$!
	exec 5<"$T/lout"
	read -r -t 120 -u 5 _ _ || fail "no pid from attach_loop"
	exec 6<>"$T/lcmd"
	"$ATF" record -p "$loop" -o "$T/l" -f loop_work -v --ready-file "$T/lready" 2>"$T/lerr" &
	lrec=$!
	timeout 60 cat "$T/lready" >/dev/null || { cat "$T/lerr" >&2; fail "second recorder not ready"; }
	echo 3 >&6
	read -r -t 120 -u 5 line
	assert_eq "done 3" "$line" "attach_loop's answer"
	kill -INT $lrec
	wait $lrec || { cat "$T/lerr" >&2; fail "the second record -p failed"; }
	if grep "detach:" "$T/lerr" >&2; then fail "the second recorder stopped threads"; fi
	echo q >&6
	exec 6>&- 5<&-
	wait $loop || fail "attach_loop failed"
}

# round NAME THREADS PAUSE_US [OPTIONS]: one target, recorded with -p (and OPTIONS), detached,
# then left throwing
round() {
	R=$1
	local k=$2 word pid c t status=0 opts=("${@:4}")
	mkfifo "$T/$R.cmd" "$T/$R.out" "$T/$R.ready"
	"$TARGETS/cxx_attach_throw" "$T/$R.cmd" "$k" "$3" >"$T/$R.out" &
	target=$!
	exec 4<"$T/$R.out"
	read -r -t 120 -u 4 word pid || fail "$R: no pid from cxx_attach_throw"
	assert_eq "pid $target" "$word $pid" "$R: first line"
	exec 3<>"$T/$R.cmd"

	assert_eq "throws" "$(ask "wait 20" | cut -d' ' -f1)" "$R: throws before the attach"
	"$ATF" record -p "$target" -o "$T/$R" -f 'thrower_*' -f 'held_*' -v "${opts[@]}" \
		--ready-file "$T/$R.ready" 2>"$T/$R.err" &
	rec=$!
	timeout 60 cat "$T/$R.ready" >/dev/null || { cat "$T/$R.err" >&2; fail "$R: recorder not ready"; }
	alive "attach"
	assert_eq "holding" "$(ask hold)" "$R: holder inside held_inner while traced"
	assert_eq "throws" "$(ask "wait $N" | cut -d' ' -f1)" "$R: throws while recording"
	alive "recording"
	kill -INT $rec
	wait $rec || { cat "$T/$R.err" >&2; fail "$R: record -p failed"; }
	alive "detach"
	assert_eq "throws" "$(ask "wait $N" | cut -d' ' -f1)" "$R: throws after the detach"
	[ "$R" = paced ] && other_recording && alive "another recording's end"
	assert_eq "held: returned 41, caught 1, return addresses original" "$(ask release)" \
		"$R: a frame open at the detach: returns, then is thrown through"
	echo q >&3
	exec 3>&-
	read -r -t 120 -u 4 word c _ t || true
	exec 4<&-
	wait $target || status=$?
	assert_eq 0 $status "$R: target exit status"
	assert_eq "caught $t" "$word $c" "$R: every throw caught"

	# the recorder's own account (-v): on trampolines every thread stopped once, both open
	# frames put back; on call sites the calls of held_outer and held_inner were redirected
	if grep -E "cannot|could not|did not|may terminate" "$T/$R.err" >&2; then fail "$R: errors"; fi
	local put_back="stopped for [0-9.]+ ms; ([2-9]|[1-9][0-9]+) return addresses put back"
	if [ "${opts[*]}" = --trampolines ]; then
		assert_contains "$T/$R.err" "detach: $((k + 2)) threads in 1 process $put_back" \
			"$R: detach line (main, workers, the holder; held_outer, held_inner, any thrower_*)"
	else
		assert_contains "$T/$R.err" "^atftrace record: [1-9][0-9]* call sites redirected$" \
			"$R: call sites by default"
	fi

	# the session: the holder's two frames open, every throw's frames closed at its catch
	# except those of the (at most one per worker) throws in flight at the detach
	"$ATF" verify "$T/$R" >/dev/null || fail "$R: verify"
	"$TOOLS/record_stats" "$T/$R" >"$T/$R.stats"
	read -r _ _ _ threads _ _ _ _ _ returns _ _ _ _ _ lost _ <<<"$(grep '^process ' "$T/$R.stats")"
	assert_eq "0 0" "$returns $lost" "$R: returns lost"
	# back to back, a worker may not run at all while recorded
	[ "$R" = paced ] && assert_eq $((k + 1)) "$threads" "$R: threads"
	assert_eq "1 1" "$(count "$R" call held_outer) $(count "$R" call held_inner)" \
		"$R: calls of held_outer held_inner"
	local open=2 fc fe
	for f in thrower_a thrower_b thrower_c; do
		fc=$(count "$R" call $f) fe=$(count "$R" exception $f)
		[ "$fc" -ge "$N" ] || fail "$R: calls of $f: $fc, expected at least $N"
		[ $((fc - fe)) -ge 0 ] && [ $((fc - fe)) -le "$k" ] || fail "$R: $f: $fc calls, $fe exceptions"
		open=$((open + fc - fe))
	done
	assert_eq $open "$(awk '$1 == "unbalanced" { print $3 }' "$T/$R.stats")" "$R: frames left open"
}
# count NAME KIND FUNC: CALL or EXCEPTION events of FUNC (demangled name prefix)
count() { awk -v k="$2" -v f="$3" '$1 == k && index($3, f "(") == 1 { print $4 }' "$T/$1.stats"; }

round paced 4 4000
round back_to_back 8 0 --trampolines
echo "ok"
