#!/usr/bin/env bash
# A recording that ends (-p, SIGINT) while traced frames are still open puts back the return
# addresses of its own return probes only. Frames another tool's return probe is also waiting
# for keep the kernel's trampoline, so that tool still sees their returns:
#   1. two atftrace sessions on one process: A traces loop_wait, B loop_outer and loop_wait; B
#      ends while both are open. B puts back loop_outer's slot (its alone) and leaves
#      loop_wait's; A then records loop_wait's RETURN (not an unwound frame), with its duration.
#   2. bpftrace counts loop_wait's calls and returns while an atftrace session on it ends with
#      the frame open: bpftrace still counts the return.
# Each time the target runs on to its exit, status 0. The sessions use entry trampolines
# (--trampolines): their frames wait on the kernel's return probes, which this is about (a
# function whose calls are redirected returns into its stub's probe instead).
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
L=$TARGETS/attach_loop

# start_target NAME: attach_loop on fifos $T/NAME.cmd (fd 3) and $T/NAME.out (fd 4); sets target
start_target() {
	mkfifo "$T/$1.cmd" "$T/$1.out"
	"$L" "$T/$1.cmd" >"$T/$1.out" &
	target=$!
	exec 4<"$T/$1.out"
	read -r -t 60 -u 4 word pid || fail "$1: no pid from attach_loop"
	exec 3>"$T/$1.cmd"
}
# attach NAME FUNCTIONS: record -p $target -f FUNCTIONS -v into $T/NAME, once ready; sets rec
attach() {
	mkfifo "$T/$1.ready"
	"$ATF" record --trampolines -p "$target" -o "$T/$1" -f "$2" -v --ready-file "$T/$1.ready" 2>"$T/$1.err" &
	rec=$!
	timeout 60 cat "$T/$1.ready" >/dev/null || { cat "$T/$1.err" >&2; fail "$1: never ready"; }
}
# expect LINE WHAT: the target's next line
expect() {
	local line
	read -r -t 60 -u 4 line || fail "$2: the target said nothing"
	assert_eq "$1" "$line" "$2"
}
# detach_counts NAME: B's --verbose count of put-back slots and of slots left to other tools
detach_counts() {
	sed -n 's/.*; \([0-9]*\) return addresses put back,.* \([0-9]*\) slots left to other tools.*/\1 \2/p' "$T/$1.err"
}

# ---- 1. two atftrace sessions ----------------------------------------------------------------
start_target two
attach A loop_wait
recA=$rec
attach B 'loop_*'
recB=$rec
echo w >&3
expect waiting "two: loop_wait entered"
kill -INT $recB
wait $recB || { cat "$T/B.err" >&2; fail "two: session B failed"; }
echo go >&3                     # the line loop_wait reads: both frames return now
expect "done w" "two: loop_outer returned"
echo 3 >&3
expect "done 3" "two: the target runs on"
echo q >&3
exec 3>&- 4<&-
wait $target || fail "two: attach_loop failed"
wait $recA || { cat "$T/A.err" >&2; fail "two: session A failed"; }

"$ATF" verify "$T/A" >"$T/A.verify" || { cat "$T/A.verify" >&2; fail "two: verify A"; }
"$TOOLS/record_stats" "$T/A" >"$T/A.stats"
read -r _ _ _ _ _ events _ calls _ returns _ exceptions _ <<<"$(grep '^process ' "$T/A.stats")"
assert_eq "2 1 1 0" "$events $calls $returns $exceptions" "two: A's events, calls, returns, unwound"
# the RETURN came when loop_wait really returned, after B had ended: not a 0-ns frame
"$ATF" dump "$T/A" >"$T/A.dump"
dur=$(awk '/loop_wait\(\)/ { print $1, $2; exit }' "$T/A.dump")
case "$dur" in
"" | 0.000\ *) cat "$T/A.dump" >&2; fail "two: A's loop_wait has no duration ($dur)" ;;
esac
"$ATF" verify "$T/B" >/dev/null || fail "two: verify B"
"$TOOLS/record_stats" "$T/B" >"$T/B.stats"
assert_eq 1 "$(awk '$1 == "call" && $3 == "loop_outer" { print $4 }' "$T/B.stats")" "two: B's loop_outer calls"
assert_eq 1 "$(awk '$1 == "call" && $3 == "loop_wait" { print $4 }' "$T/B.stats")" "two: B's loop_wait calls"
assert_eq "1 1" "$(detach_counts B)" "two: B's slots put back / left to A"

# ---- 2. atftrace and bpftrace ----------------------------------------------------------------
need_tracefs
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
start_target bt
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$L:loop_wait { @calls = count(); }
	uretprobe:$L:loop_wait { @returns = count(); }" >"$T/bpftrace.out" 2>&1 &
bt=$!
wait_for "$T/bpftrace.out" "^ready$" "bpftrace attached"
attach C 'loop_*'
recC=$rec
echo w >&3
expect waiting "bt: loop_wait entered"
kill -INT $recC
wait $recC || { cat "$T/C.err" >&2; fail "bt: the session failed"; }
echo go >&3
expect "done w" "bt: loop_outer returned"
stop_bpftrace $bt
assert_eq "1 1" "$(awk '/^@calls:/ { c = $2 } /^@returns:/ { r = $2 } END { print c + 0, r + 0 }' "$T/bpftrace.out")" \
	"bt: bpftrace's loop_wait calls and returns"
echo q >&3
exec 3>&- 4<&-
wait $target || fail "bt: attach_loop failed"
assert_eq "1 1" "$(detach_counts C)" "bt: slots put back / left to bpftrace"
echo "ok: a session ending puts back only its own return addresses (atftrace, bpftrace)"
