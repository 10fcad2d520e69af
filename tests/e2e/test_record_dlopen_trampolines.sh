#!/usr/bin/env bash
# Entry trampolines in a library loaded with dlopen while recording (user/probe/trampoline.c:
# tramp_process__attach_module, called from user/record/record_live.c while ld.so holds the
# target at its debug-state call). libatfplugin's plugin_leaf starts with a rip-relative mov,
# which the kernel would single-step; plugin_work starts with a push, which it emulates:
#   - with a second thread running in the program (stopped too while the plugin is patched);
#   - launched and -p: record -v says plugin_leaf is entered through a trampoline, and the
#     calls are exact, the K made the moment dlopen returns included;
#   - dlclose and dlopen again, CYCLES times: patched again at each load (one trampoline file
#     in the process, not one per load; the same one when ld.so puts the plugin at the same
#     place, a new one when that place is taken), exact counts, no crash;
#   - a library of a program the launched command execs is patched once ld.so mapped it;
#   - -p: a plugin patched while recording is guarded: bpftrace's uprobe on hot_lea, which a
#     thread calls hot, gets it given back, the target lives on and every call is counted;
#   - -p: the plugin's text differs from the file while recording (the jmp) and is the file's
#     again after it; a process that loaded it before the session is patched at the attach and
#     again after each dlclose/dlopen; a session that ends while the plugin is unloaded writes
#     nothing into its old range, and the target loads and runs it again afterwards.
# The target acknowledges every command; no sleep stands in for that.
source "$(dirname "$0")/lib.sh"
need_bpf
cleanup() { local j; for j in $(jobs -p); do kill -KILL "$j" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
K=211
CYCLES=3
PLUGIN=$TARGETS/libatfplugin.so
[ -x "$TARGETS/dlopen_user" ] && [ -f "$PLUGIN" ] || fail "build first: make OUTPUT=$OUTPUT targets"

say() {     # command expected-ack what: one command to dlopen_user (fd 3), its ack (fd 4)
	local line
	echo "$1" >&3
	read -r -t 120 -u 4 line || fail "$3: dlopen_user gave no answer"
	assert_eq "$2" "$line" "$3"
}
loaded_check() {    # pid what: the plugin is patched in pid, through one trampoline file
	# plugin_leaf's 5-byte jmp, plugin_work's int3: at least 4 bytes (a plain int3 alone is 1)
	local d; d=$(text_diff "$1" "$PLUGIN")
	[ "$d" -ge 4 ] || fail "$2: $d bytes of the plugin's text differ from the file (no jmp)"
	assert_eq 1 "$(grep -c 'memfd:atftrace-trampolines' /proc/"$1"/maps)" "$2: trampoline files in the process"
}
tramp_file() { awk '/memfd:atftrace-trampolines/ { print $5 }' /proc/"$1"/maps; }  # its inode
cycles() {  # pid what: CYCLES times load (K calls), K calls more, unload
	local file=
	for i in $(seq $CYCLES); do
		say "l $K" "loaded $K" "$2: load $i"
		loaded_check "$1" "$2: load $i"
		# at the same place again, the plugin reuses its trampolines; moved, it gets new ones
		case $i in
		2) assert_eq "$file" "$(tramp_file "$1")" "$2: load $i at the same place: the same trampolines" ;;
		3) [ "$file" != "$(tramp_file "$1")" ] || fail "$2: load $i elsewhere: the old trampolines" ;;
		esac
		file=$(tramp_file "$1")
		say "c $K" "done $K" "$2: calls $i"
		say u closed "$2: unload $i"
		[ $i != 2 ] || say b blocked "$2: the plugin's place taken"
	done
}
counts() {  # session work-calls what
	"$ATF" verify "$1" >/dev/null || fail "$3: verify"
	"$TOOLS/record_stats" "$1" >"$T/stats"
	assert_eq "$2" "$(awk '$1 == "call" && $3 == "plugin_work" { print $4 }' "$T/stats")" "$3: plugin_work calls"
	assert_eq $((2 * $2)) "$(awk '$1 == "call" && $3 == "plugin_leaf" { print $4 }' "$T/stats")" "$3: plugin_leaf calls"
	assert_eq 0 "$(awk '$1 == "process" { print $16 }' "$T/stats")" "$3: lost"
}
reported() {    # err-file loads what: one -v summary per load, the later ones as mapped again
	assert_eq "$2" "$(grep -c 'libatfplugin.so: 1 function through trampolines, 0 at nop5 sites, 1 emulated$' "$1")" "$3: -v: plugin_leaf through a trampoline at each load"
	assert_contains "$1" "libatfplugin.so: plugin_work: plain probe \(emulated\)$" "$3: -v: plugin_work keeps its probe"
	assert_eq $(($2 - 1)) "$(grep -c "mapped .*/libatfplugin.so: 2 functions attached anew, 1 through trampolines$" "$1")" "$3: -v: patched again after each dlclose"
}

# ---- launched --------------------------------------------------------------------------------
mkfifo "$T/cmd" "$T/out"
"$ATF" record --trampolines -v -o "$T/launched" -f 'libatfplugin.so:plugin_*' -- "$TARGETS/dlopen_user" "$T/cmd" "$PLUGIN" \
	>"$T/out" 2>"$T/l.err" &
rec=$!
exec 4<"$T/out" 3<>"$T/cmd"
read -r -t 120 -u 4 word pid || fail "launched: no pid from dlopen_user"
say s spinning "launched: a second thread"     # running while the target is held and patched
cycles "$pid" launched
echo q >&3
exec 3>&- 4<&-
wait $rec || { cat "$T/l.err" >&2; fail "record (launched) failed"; }
if grep -q "the target" "$T/l.err"; then fail "launched: $(grep 'the target' "$T/l.err")"; fi
reported "$T/l.err" $CYCLES launched
counts "$T/launched" $((CYCLES * 2 * K)) launched

# ---- a program the launched command execs: its library, attached at the exec before ld.so
# mapped it, is patched once it is (lib_leaf starts with a rip-relative mov too) ---------------
N=1000
"$ATF" record --trampolines -v -o "$T/exec" -f 'libatftest.so:lib_*' -- /bin/sh -c "exec '$TARGETS/shlib_user' $N" 2>"$T/x.err" \
	|| { cat "$T/x.err" >&2; fail "record (exec) failed"; }
if grep -q "the target" "$T/x.err"; then fail "exec: $(grep 'the target' "$T/x.err")"; fi
assert_contains "$T/x.err" "libatftest.so: 1 function through trampolines, 0 at nop5 sites, 1 emulated$" "exec: -v: lib_leaf through a trampoline"
"$TOOLS/record_stats" "$T/exec" >"$T/stats"
assert_eq $N "$(awk '$1 == "call" && $3 == "lib_entry" { print $4 }' "$T/stats")" "exec: lib_entry calls"
assert_eq $((2 * N)) "$(awk '$1 == "call" && $3 == "lib_leaf" { print $4 }' "$T/stats")" "exec: lib_leaf calls"

# ---- -p: cycles, then the session ends with the plugin loaded: its text is restored ----------
rm -f "$T/cmd" "$T/out"; mkfifo "$T/cmd" "$T/out" "$T/ready"
"$TARGETS/dlopen_user" "$T/cmd" "$PLUGIN" >"$T/out" &
target=$!
exec 4<"$T/out" 3<>"$T/cmd"
read -r -t 120 -u 4 word pid || fail "-p: no pid from dlopen_user"
"$ATF" record --trampolines -v -p "$target" -o "$T/attached" -f 'libatfplugin.so:plugin_*' --ready-file "$T/ready" 2>"$T/p.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/p.err" >&2; fail "the recorder never became ready"; }
cycles "$target" -p
say "l $K" "loaded $K" "-p: last load"
loaded_check "$target" "-p: last load"
kill -INT $rec
wait $rec || { cat "$T/p.err" >&2; fail "record -p failed"; }
assert_eq 0 "$(text_diff "$target" "$PLUGIN")" "-p: the plugin's text after the session"
say "c $K" "done $K" "-p: calls after the session"
say u closed "-p: unload after the session"
say "l $K" "loaded $K" "-p: load after the session"
echo q >&3
exec 3>&- 4<&-
wait $target || fail "dlopen_user failed after the -p session"
reported "$T/p.err" $((CYCLES + 1)) -p
counts "$T/attached" $(((2 * CYCLES + 1) * K)) -p

# ---- -p on a process that loaded the plugin before: patched at the attach, again at each
# dlopen after a dlclose (the process is held at ld.so's changes for that); the session ends
# while the plugin is unloaded: nothing is written into its old range ---------------------------
rm -f "$T/cmd" "$T/out" "$T/ready"; mkfifo "$T/cmd" "$T/out" "$T/ready"
"$TARGETS/dlopen_user" "$T/cmd" "$PLUGIN" >"$T/out" &
target=$!
exec 4<"$T/out" 3<>"$T/cmd"
read -r -t 120 -u 4 word pid || fail "-p (loaded before): no pid from dlopen_user"
say s spinning "-p (loaded before): a second thread"
say "l 1" "loaded 1" "-p (loaded before): load before the session"
"$ATF" record --trampolines -v -p "$target" -o "$T/before" -f 'libatfplugin.so:plugin_*' --ready-file "$T/ready" 2>"$T/b.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/b.err" >&2; fail "the recorder never became ready (loaded before)"; }
loaded_check "$target" "-p (loaded before): attached"
say "c $K" "done $K" "-p (loaded before): calls"
for i in $(seq $CYCLES); do
	say u closed "-p (loaded before): unload $i"
	say "l $K" "loaded $K" "-p (loaded before): load $i"
	loaded_check "$target" "-p (loaded before): load $i"
	say "c $K" "done $K" "-p (loaded before): calls $i"
done
say u closed "-p (loaded before): last unload"
kill -INT $rec
wait $rec || { cat "$T/b.err" >&2; fail "record -p (loaded before) failed"; }
say "l $K" "loaded $K" "-p (loaded before): load after the session"
assert_eq 0 "$(text_diff "$target" "$PLUGIN")" "-p (loaded before): the plugin's text loaded after the session"
say "c $K" "done $K" "-p (loaded before): calls after the session"
echo q >&3
exec 3>&- 4<&-
wait $target || fail "dlopen_user failed after a session that ended while its plugin was unloaded"
reported "$T/b.err" $((CYCLES + 1)) "-p (loaded before)"
counts "$T/before" $(((2 * CYCLES + 1) * K)) "-p (loaded before)"
# ---- another tool's uprobe on the plugin patched while recording: the registration guard ----
# The session starts before the plugin is loaded (nothing patched, nothing guarded yet). Once
# the plugin is patched, a thread calls hot_lea (a 3-byte first instruction) hot and bpftrace
# probes it: unguarded, the kernel would resume inside our jmp and kill the target; guarded, the
# function is given back and every call is counted.
need_tracefs
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
rm -f "$T/cmd" "$T/out" "$T/ready"; mkfifo "$T/cmd" "$T/out" "$T/ready"
"$TARGETS/dlopen_user" "$T/cmd" "$PLUGIN" >"$T/out" &
target=$!
exec 4<"$T/out" 3<>"$T/cmd"
read -r -t 120 -u 4 word pid || fail "-p (guard): no pid from dlopen_user"
"$ATF" record --trampolines -v -p "$target" -o "$T/guard" -f 'libatfplugin.so:plugin_*' -f 'libatfplugin.so:hot_lea' \
	--ready-file "$T/ready" 2>"$T/gd.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/gd.err" >&2; fail "the recorder never became ready (guard)"; }
say "l $K" "loaded $K" "-p (guard): load"
assert_contains "$T/gd.err" "libatfplugin.so: 2 functions through trampolines, 0 at nop5 sites, 1 emulated$" "-p (guard): hot_lea and plugin_leaf patched"
say h hot "-p (guard): the hot thread"
bpftrace -e "uprobe:$PLUGIN:hot_lea { @calls = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
timeout 60 bash -c 'until grep -q "hot_lea: another tool probed it" "$1"; do sleep 0.05; done' _ "$T/gd.err" \
	|| { cat "$T/gd.err" >&2; fail "-p (guard): the guard did not give hot_lea back"; }
say "c $K" "done $K" "-p (guard): calls under bpftrace's probe"
echo H >&3
read -r -t 120 -u 4 word hot || fail "-p (guard): the target died with bpftrace's probe on hot_lea"
stop_bpftrace $bt
kill -INT $rec
wait $rec || { cat "$T/gd.err" >&2; fail "record -p (guard) failed"; }
assert_eq 0 "$(text_diff "$target" "$PLUGIN")" "-p (guard): the plugin's text after the session"
echo q >&3
exec 3>&- 4<&-
wait $target || fail "dlopen_user failed under two tools"
[ "$(awk '/^@calls:/ { print $2 }' "$T/bt.out")" -gt 0 ] || { cat "$T/bt.out" >&2; fail "-p (guard): bpftrace counted nothing"; }
counts "$T/guard" $((2 * K)) "-p (guard)"
assert_eq "$hot" "$(awk '$1 == "call" && $3 == "hot_lea" { print $4 }' "$T/stats")" "-p (guard): hot_lea calls"
echo "ok: plugin_leaf through a trampoline at each of $CYCLES loads, exact counts, text restored"
