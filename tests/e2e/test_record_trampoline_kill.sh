#!/usr/bin/env bash
# A target killed while record -p holds it stopped to place trampolines: the recorder ends the
# session normally ("target exited", exit 0, a session that verifies) and leaves no traced
# zombie behind (the target's parent reaps it: SIGKILL status). The moment is the target's own
# state: /proc/PID/status shows the recorder as its tracer only while it is stopped for patching.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v sqlite3 >/dev/null || fail "sqlite3 missing: scripts/deps.sh installs it"
# (jobs -p: only this shell's background jobs still running, never a reused pid)
cleanup() { local j; for j in $(jobs -p); do kill -KILL "$j" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT

caught=0
for attempt in 1 2 3 4 5; do
	rm -rf "$T/s" "$T/in" "$T/out"
	mkfifo "$T/in" "$T/out"
	exec 3<>"$T/in" 4<>"$T/out"
	sqlite3 :memory: <&3 >"$T/out" &
	target=$!
	echo "select 42;" >&3
	read -r -t 30 -u 4 line || fail "sqlite3 did not answer"
	assert_eq 42 "$line" "sqlite3 runs"
	"$ATF" record --trampolines -p $target -o "$T/s" -f 'libsqlite3.so.0:*' 2>"$T/err" &
	rec=$!
	while kill -0 $rec 2>/dev/null; do
		tracer=$(awk '$1 == "TracerPid:" { print $2 }' /proc/$target/status 2>/dev/null || true)
		if [ -n "$tracer" ] && [ "$tracer" != 0 ]; then
			kill -KILL $target
			caught=1
			break
		fi
	done
	if [ $caught = 0 ]; then        # it was quicker than us: stop this round, try again
		kill -INT $rec 2>/dev/null || true
		kill -KILL $target 2>/dev/null || true
	fi
	rc=0; wait $target || rc=$?
	[ $caught = 0 ] || assert_eq 137 $rc "the killed target's status, reaped by its parent"
	rc=0; wait $rec || rc=$?
	exec 3>&- 4<&-
	[ $caught = 1 ] && break
done
[ $caught = 1 ] || fail "never saw the target stopped for patching in 5 attempts"
assert_eq 0 $rc "record's exit status"
assert_contains "$T/err" "ended by target exited" "the session ends with the target"
"$ATF" verify "$T/s" >/dev/null || fail "verify"
echo "ok"
