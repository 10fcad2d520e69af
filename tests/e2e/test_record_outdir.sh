#!/usr/bin/env bash
# -o naming an earlier session is refused (nothing is launched) unless --force, which replaces
# it; --duration leaves a launched command running, --kill-at-end ends it with SIGTERM.
source "$(dirname "$0")/lib.sh"
need_bpf

"$ATF" record -o "$T/s" -f 'dbg_*' -- "$TARGETS/debug_funcs" 3 >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "first record"; }
if "$ATF" record -o "$T/s" -f 'dbg_*' -- "$TARGETS/debug_funcs" 4 >"$T/out" 2>"$T/err"; then fail "-o over an earlier session succeeded"; fi
assert_contains "$T/err" "^atftrace record: -o $T/s: holds an earlier session \(pid_[0-9]+\); choose another directory, or add --force to replace it$" "refusal"
[ -s "$T/out" ] && fail "the command ran although the session was refused"
assert_eq 1 "$(ls -d "$T"/s/pid_* | wc -l)" "process directories after the refusal"
"$ATF" record --force -o "$T/s" -f 'dbg_*' -- "$TARGETS/debug_funcs" 4 >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record --force"; }
assert_eq 1 "$(ls -d "$T"/s/pid_* | wc -l)" "process directories after --force"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
assert_eq 4 "$(awk '$1 == "call" && $3 == "dbg_outer" { print $4 }' "$T/stats")" "the new session's calls"

# --duration: the session ends, the command goes on (untraced) until told to quit
mkfifo "$T/cmd" "$T/o1"
"$ATF" record -o "$T/d" --duration 0.5 -f 'libc.so.6:strlen' -- "$TARGETS/calls_libc" loop "$T/cmd" >"$T/o1" 2>"$T/err" &
rec=$!
exec 4<"$T/o1"
read -r -t 120 -u 4 word pid || fail "no pid from calls_libc"
wait $rec || { cat "$T/err" >&2; fail "record --duration"; }
assert_contains "$T/err" "ended by duration" "end reason"
kill -0 "$pid" 2>/dev/null || fail "--duration ended the launched command"
exec 3<>"$T/cmd"; echo "s 3" >&3; read -r -t 120 -u 4 line; assert_eq "done s 3" "$line" "the command still answers"
echo q >&3; exec 3>&- 4<&-
# --kill-at-end: SIGTERM once the session ends first
rm -f "$T/cmd" "$T/o1"; mkfifo "$T/cmd" "$T/o1"
"$ATF" record -o "$T/k" --duration 0.5 --kill-at-end -f 'libc.so.6:strlen' -- "$TARGETS/calls_libc" loop "$T/cmd" >"$T/o1" 2>"$T/err" &
rec=$!
exec 4<"$T/o1"
read -r -t 120 -u 4 word pid || fail "no pid from calls_libc (--kill-at-end)"
exec 3<>"$T/cmd"     # it waits in fgets on the fifo
wait $rec || { cat "$T/err" >&2; fail "record --kill-at-end"; }
assert_contains "$T/err" "^atftrace record: --kill-at-end: sending SIGTERM to $pid$" "kill line"
read -r -t 120 -u 4 line && fail "the command went on after --kill-at-end: $line"
exec 3>&- 4<&-
echo "ok: -o refuses an earlier session, --force replaces it, --duration leaves the command, --kill-at-end ends it"
