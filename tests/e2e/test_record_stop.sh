#!/usr/bin/env bash
# Ending a session while the target runs: SIGINT, SIGTERM and --duration each finalize every
# file and write the manifest with the end reason; exit 0; the target keeps running untraced.
# Every call made while the session ran is recorded, exactly (a --duration session too: the
# calls before its end), and none made after a --duration session ended.
source "$(dirname "$0")/lib.sh"
need_bpf
K=300

mkfifo "$T/cmd" "$T/out"
"$TARGETS/attach_loop" "$T/cmd" >"$T/out" &
target=$!
exec 4<"$T/out"
read -r -t 120 -u 4 _ _
exec 3<>"$T/cmd"

session() {   # name signal|duration
	mkfifo "$T/ready.$1"
	if [ "$2" = duration ]; then
		"$ATF" record -p $target -o "$T/$1" -f loop_work --duration 3 --ready-file "$T/ready.$1" 2>"$T/err.$1" &
	else
		"$ATF" record -p $target -o "$T/$1" -f loop_work --ready-file "$T/ready.$1" 2>"$T/err.$1" &
	fi
	local rec=$!
	timeout 60 cat "$T/ready.$1" >/dev/null || { cat "$T/err.$1" >&2; fail "$1: never ready"; }
	echo $K >&3
	read -r -t 120 -u 4 line; assert_eq "done $K" "$line" "$1: ack"
	if [ "$2" = duration ]; then
		# those K calls were made while it recorded (it runs 3 s; they take milliseconds)
		kill -0 $rec 2>/dev/null && ! grep -q "ended by" "$T/err.$1" \
			|| fail "$1: the session ended before the target's $K calls were done"
		# wait for the recorder to end on its own; calls made afterwards are not recorded
		wait $rec || { cat "$T/err.$1" >&2; fail "$1: record exited non-zero"; }
		echo $K >&3
		read -r -t 120 -u 4 line; assert_eq "done $K" "$line" "$1: ack after the end"
	else
		kill -"$2" $rec
		wait $rec || { cat "$T/err.$1" >&2; fail "$1: record exited non-zero"; }
	fi
	"$ATF" verify "$T/$1" >/dev/null || fail "$1: verify"
	"$TOOLS/record_stats" "$T/$1" >"$T/stats.$1"
	assert_eq "$K" "$(awk '$1 == "call" && $3 == "loop_work" { print $4 }' "$T/stats.$1")" "$1: calls"
	assert_eq "$3" "$(awk '$1 == "process" { print $18 }' "$T/stats.$1")" "$1: end reason"
	assert_contains "$T/err.$1" "ended by $3" "$1: summary"
}
session int INT signal
session term TERM signal
session dur duration duration
kill -0 $target || fail "the target did not survive the recorders"
echo q >&3
exec 3>&-
wait $target || fail "attach_loop failed"
echo "ok"
