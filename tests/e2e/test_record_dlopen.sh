#!/usr/bin/env bash
# A plugin loaded with dlopen after the recording started, by a launched target and by one
# attached with -p: its functions are attached when ld.so maps it (the process is held at
# ld.so's debug-state call meanwhile), and every call after the load is recorded, exactly,
# also the K calls the target makes the moment dlopen returns.
# The target says when it loaded the plugin; no sleep stands in for that.
source "$(dirname "$0")/lib.sh"
need_bpf
K=321
PLUGIN=$TARGETS/libatfplugin.so

drive() {   # what: dlopen_user (its output on fd 4, its pid line read) loads, calls K times, quits
	exec 3<>"$T/cmd"
	echo "l $K" >&3; read -r -t 120 -u 4 line; assert_eq "loaded $K" "$line" "$1: ack of the load"
	echo "c $K" >&3; read -r -t 120 -u 4 line; assert_eq "done $K" "$line" "$1: ack of the calls"
	echo q >&3; exec 3>&-
}
check() {   # session what
	"$ATF" verify "$1" >/dev/null || fail "$2: verify"
	"$TOOLS/record_stats" "$1" >"$T/stats"
	assert_eq $((2 * K)) "$(awk '$1 == "call" && $3 == "plugin_work" { print $4 }' "$T/stats")" "$2: plugin_work calls"
	assert_eq $((4 * K)) "$(awk '$1 == "call" && $3 == "plugin_leaf" { print $4 }' "$T/stats")" "$2: plugin_leaf calls"
	assert_eq 0 "$(awk '$1 == "process" { print $16 }' "$T/stats")" "$2: lost"
	grep -q '"path": ".*/libatfplugin.so"' "$1"/pid_*/manifest.json || fail "$2: the plugin is not in the manifest"
}

# launched: the plugin is not among the program's libraries, so it is waited for
mkfifo "$T/cmd" "$T/out"
"$ATF" record -o "$T/launched" -f 'libatfplugin.so:plugin_*' -- "$TARGETS/dlopen_user" "$T/cmd" "$PLUGIN" \
	>"$T/out" 2>"$T/err" &
rec=$!
exec 4<"$T/out"
read -r -t 120 -u 4 word pid || fail "launched: no pid from dlopen_user"
drive launched
exec 4<&-
wait $rec || { cat "$T/err" >&2; fail "record (launched) failed"; }
assert_contains "$T/err" "libatfplugin.so: not loaded by .*dlopen_user yet" "waiting line"
assert_contains "$T/err" "^atftrace record: process $pid runs .*/libatfplugin.so: 2 functions attached$" "attached at the load"
check "$T/launched" launched

# -p: attached to a running process before it loads the plugin
rm -f "$T/cmd" "$T/out"
mkfifo "$T/cmd" "$T/out" "$T/ready"
"$TARGETS/dlopen_user" "$T/cmd" "$PLUGIN" >"$T/out" &
target=$!
exec 4<"$T/out"
read -r -t 120 -u 4 word pid || fail "-p: no pid from dlopen_user"
"$ATF" record -p "$target" -o "$T/attached" -f 'libatfplugin.so:plugin_*' --ready-file "$T/ready" 2>"$T/err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/err" >&2; fail "the recorder never became ready"; }
drive attached
exec 4<&-
wait $target || fail "dlopen_user failed"
wait $rec || { cat "$T/err" >&2; fail "record -p failed"; }
assert_contains "$T/err" "libatfplugin.so: not loaded by the process yet" "-p waiting line"
check "$T/attached" "-p"
echo "ok: plugin loaded later, $((2 * K)) + $((4 * K)) calls exact, launched and -p"
