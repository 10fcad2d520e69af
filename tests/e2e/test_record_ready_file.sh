#!/usr/bin/env bash
# record --ready-file PATH: created new, or an existing FIFO of the caller's opened without
# blocking the recorder. Until the FIFO's reader comes, the recorder records and hears SIGTERM;
# a FIFO another user planted, a link (even one to nothing) and an existing file are refused
# with one line, and nothing is created through a link.
source "$(dirname "$0")/lib.sh"
need_bpf
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
K=321

target='' rec=''
cleanup() {
	[ -z "$rec" ] || kill -KILL "$rec" 2>/dev/null || true
	[ -z "$target" ] || kill -KILL "$target" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

chmod 755 "$T"
mkdir -m 1777 "$T/pub"
mkfifo "$T/cmd" "$T/out"
"$TARGETS/attach_loop" "$T/cmd" >"$T/out" &
target=$!
exec 4<"$T/out"
read -r -u 4 word pid || fail "no pid from attach_loop"
assert_eq "pid $target" "$word $pid" "attach_loop's first line"
exec 3>"$T/cmd"

# refused NAME READY ERRTAIL: record -p with --ready-file READY exits 1 with that one line (a
# recorder blocked in open would be killed by the timeout: exit 137)
refused() {
	local rc=0
	timeout -s KILL 30 "$ATF" record -p "$target" -o "$T/s_$1" -f loop_work --ready-file "$2" 2>"$T/$1.err" || rc=$?
	assert_eq 1 "$rc" "exit status with --ready-file $2"
	assert_eq "atftrace record: --ready-file $2: $3" "$(grep -v '^atftrace record: .*functions in' "$T/$1.err")" \
		"the refusal of --ready-file $2"
}
# started NAME READY: record -p in the background until it says it records (probes attached)
started() {
	"$ATF" record -p "$target" -o "$T/s_$1" -f loop_work --ready-file "$2" 2>"$T/$1.err" &
	rec=$!
	timeout 60 grep -m 1 -q 'recording to' <(tail -F -n +1 "$T/$1.err" 2>/dev/null) ||
		{ cat "$T/$1.err" >&2; fail "$1: the recorder never started recording"; }
}
# calls NAME: K calls recorded, then the recorder is stopped with SIGTERM and must end by itself
calls_then_term() {
	echo $K >&3
	read -r -u 4 line; assert_eq "done $K" "$line" "$1: ack"
	kill -TERM "$rec"
	timeout 30 tail --pid="$rec" -f /dev/null || fail "$1: the recorder did not end on SIGTERM"
	wait "$rec" || { cat "$T/$1.err" >&2; fail "$1: the recorder failed"; }
	rec=''
	"$ATF" verify "$T/s_$1" >/dev/null || fail "$1: verify"
	"$TOOLS/record_stats" "$T/s_$1" >"$T/$1.stats"
	assert_eq $K "$(awk '$1 == "call" && $3 == "loop_work" { print $4 }' "$T/$1.stats")" "$1: calls recorded"
}

# 1. a FIFO nobody planted, which nobody reads: refused at once, never waited for
as_nobody mkfifo "$T/pub/ready"
refused planted "$T/pub/ready" "a FIFO of another user: refused"
# 2. a link is never followed, not even a dangling one (following it would create its target)
ln -s "$T/created" "$T/dangling"
refused dangling "$T/dangling" "a symbolic link: not followed"
[ ! -e "$T/created" ] && [ -L "$T/dangling" ] || fail "--ready-file created the target of a link"
as_nobody ln -s "$T/created" "$T/pub/link"
refused link "$T/pub/link" "a symbolic link: not followed"
[ ! -e "$T/created" ] || fail "--ready-file created the target of nobody's link"
# 3. an existing file is not a signal anyone can wait for: refused without --force
: >"$T/exists"
refused exists "$T/exists" "exists (a regular file): add --force to replace it, or name a new path or a FIFO"

# 4. our FIFO, no reader yet: the recorder records meanwhile and ends on SIGTERM
mkfifo "$T/ready"
started unread "$T/ready"
calls_then_term unread

# 5. our FIFO, its reader comes after the recorder started: it learns it then
rm -f "$T/ready"; mkfifo "$T/ready"
started late "$T/ready"
timeout 30 cat "$T/ready" >/dev/null || fail "late: the reader of the FIFO never learnt it"
calls_then_term late

# 6. a new path is created, with the session's mode
started new "$T/new.ready"
calls_then_term new
assert_eq "600 root" "$(stat -c '%a %U' "$T/new.ready")" "the created ready file"
echo q >&3
exec 3>&-
wait "$target" || fail "attach_loop failed"
target=''
echo "ok"
