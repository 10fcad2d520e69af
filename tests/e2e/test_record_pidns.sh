#!/usr/bin/env bash
# A recorder inside a pid namespace (a container, a Kubernetes sidecar sharing the app's pid
# namespace) records with the pids of its namespace: -p PID, a launched command and -a each trace
# an attach_loop inside `unshare -pf --mount-proc` with exact counts, its main thread and a
# worker thread under the tids the target itself sees (getpid(), gettid()), while a twin of the
# same binary runs outside the namespace, where the recorder cannot see it, and is not recorded;
# --follow-fork there traces a child under its pid in the namespace.
# Synchronisation: attach_loop answers every command on a fifo; the recorder opens its
# --ready-file fifo once its probes are attached.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v unshare >/dev/null || fail "unshare (util-linux) is missing"
APP=$T/attach_loop
cp "$TARGETS/attach_loop" "$APP"        # a private copy: only this test's processes run it
K=300           # calls on the main thread
M=120           # calls on a worker thread
TWIN_K=77       # calls of the twin outside, during each session

# The twin: same binary, outside the namespace, busy while each session records.
mkfifo "$T/twin.cmd" "$T/twin.out"
"$APP" "$T/twin.cmd" >"$T/twin.out" &
TWIN=$!
exec {TWIN_OUT}<"$T/twin.out"
read -r -t 120 -u $TWIN_OUT line || fail "no pid from the twin"
exec {TWIN_CMD}<>"$T/twin.cmd"

# What runs inside the new pid namespace (bash is its pid 1).
cat >"$T/inside.sh" <<'EOF'
set -eu
mode=$1 APP=$2 ATF=$3 T=$4 FORK_EXEC=${5:-}
case $mode in
pid)
	# -p once the target runs attach_loop (its first line), not while it is still the shell
	mkfifo "$T/in.first"
	"$APP" "$T/in.cmd" >"$T/in.first" &
	target=$!
	exec 5<"$T/in.first"
	read -r -t 120 line <&5
	{ echo "$line"; cat <&5; } >"$T/in.out" &
	"$ATF" record -p $target -f loop_work -o "$T/s_pid" --ready-file "$T/ready" 2>"$T/rec.err"
	;;
launch)
	"$ATF" record -f loop_work -o "$T/s_launch" -- "$APP" "$T/in.cmd" >"$T/in.out" 2>"$T/rec.err"
	;;
all)
	"$ATF" record -a -f "$APP:loop_work" -o "$T/s_all" --ready-file "$T/ready" 2>"$T/rec.err" &
	rec=$!
	timeout 60 cat "$T/ready" >/dev/null
	"$APP" "$T/in.cmd" >"$T/in.out"
	kill -INT $rec
	wait $rec
	;;
fork)
	"$ATF" record --follow-fork -o "$T/s_fork" -f child_work -f parent_work -- "$FORK_EXEC" 5 3 \
		2>"$T/rec.err"
	;;
esac
EOF

ask() {         # fd-out fd-in command expected-answer-pattern
	echo "$3" >&"$2"
	read -r -t 120 -u "$1" line || fail "no answer to '$3'"
	[[ $line =~ $4 ]] || fail "answer to '$3': '$line'"
}

# record_inside MODE: one session inside a new pid namespace; sets P (the target's pid there)
# and TID (its worker thread's tid there).
record_inside() {
	local mode=$1
	rm -f "$T/in.cmd" "$T/in.out" "$T/in.first" "$T/ready"
	mkfifo "$T/in.cmd" "$T/in.out" "$T/ready"
	unshare -pf --mount-proc bash "$T/inside.sh" "$mode" "$APP" "$ATF" "$T" 2>"$T/inside.err" &
	local ns=$!
	# read-write opens never block, so a recorder that fails to start cannot hang the test
	exec {IN_OUT}<>"$T/in.out"
	[ "$mode" != pid ] || timeout 60 cat "$T/ready" >/dev/null \
		|| { cat "$T/rec.err" "$T/inside.err" >&2; fail "$mode: the recorder never became ready"; }
	read -r -t 120 -u $IN_OUT word P || fail "$mode: no pid from the target inside"
	assert_eq pid "$word" "$mode: the target's first line"
	exec {IN_CMD}<>"$T/in.cmd"
	ask $IN_OUT $IN_CMD "$K" "^done $K\$"
	ask $TWIN_OUT $TWIN_CMD "$TWIN_K" "^done $TWIN_K\$"
	ask $IN_OUT $IN_CMD "t$M" "^thread [0-9]+ done $M\$"
	read -r _ TID _ <<<"$line"
	echo q >&$IN_CMD
	exec {IN_CMD}>&- {IN_OUT}<&-
	wait $ns || { cat "$T/rec.err" "$T/inside.err" >&2; fail "$mode: the session inside failed"; }
}

# check MODE SESSION: the target inside, and only it, under its own pids, with every call.
check() {
	local mode=$1 s=$2
	"$ATF" verify "$s" >/dev/null || fail "$mode: verify"
	"$TOOLS/record_stats" "$s" >"$T/stats"
	assert_eq "processes 1" "$(head -n 1 "$T/stats")" "$mode: processes (the twin outside is not seen)"
	read -r _ p _ threads _ events _ _ _ _ _ _ _ _ _ lost _ <<<"$(grep '^process ' "$T/stats")"
	assert_eq "$P" "$p" "$mode: recorded pid (the target's getpid() inside)"
	assert_eq 2 "$threads" "$mode: threads"
	assert_eq $((2 * (K + M))) "$events" "$mode: events"
	assert_eq 0 "$lost" "$mode: lost"
	assert_eq $((K + M)) "$(awk '$1 == "call" && $3 == "loop_work" { print $4 }' "$T/stats")" \
		"$mode: calls"
	[ -f "$s/pid_$P/manifest.json" ] || fail "$mode: no pid_$P/manifest.json"
	assert_eq "$P" "$(jq -r .pid "$s/pid_$P/manifest.json")" "$mode: manifest pid"
	assert_eq "$P:$((2 * K)) $TID:$((2 * M))" \
		"$(jq -r '[.threads[] | "\(.tid):\(.index_events)"] | join(" ")' "$s/pid_$P/manifest.json")" \
		"$mode: manifest tids (the target's gettid() inside) and their events"
}

record_inside pid
check "-p" "$T/s_pid"
grep -q "ended by target exited" "$T/rec.err" || fail "-p: the session did not end with the target"
record_inside launch
check "launch" "$T/s_launch"
record_inside all
check "-a" "$T/s_all"

# --follow-fork: the child forked inside is traced from its first instruction, under its pid
# there (a fresh namespace has a few processes; the host's pids here are far above them)
unshare -pf --mount-proc bash "$T/inside.sh" fork "$APP" "$ATF" "$T" "$TARGETS/fork_exec" \
	2>"$T/inside.err" || { cat "$T/rec.err" "$T/inside.err" >&2; fail "--follow-fork: the session inside failed"; }
"$TOOLS/record_stats" "$T/s_fork" >"$T/stats"
assert_eq "processes 2" "$(head -n 1 "$T/stats")" "--follow-fork: processes"
parent=$(awk '$1 == "call" && $3 == "parent_work" { print $2 }' "$T/stats")
child=$(awk '$1 == "call" && $3 == "child_work" { print $2 }' "$T/stats")
[ -n "$parent" ] && [ -n "$child" ] && [ "$parent" != "$child" ] || fail "--follow-fork: parent ($parent) and child ($child) not told apart"
[ "$parent" -lt 100 ] && [ "$child" -lt 100 ] || fail "--follow-fork: pids $parent and $child are not those of the namespace"
assert_eq 5 "$(awk -v p=$child '$1 == "call" && $2 == p && $3 == "child_work" { print $4 }' "$T/stats")" "--follow-fork: the child's calls"
assert_eq 3 "$(awk -v p=$parent '$1 == "call" && $2 == p && $3 == "parent_work" { print $4 }' "$T/stats")" "--follow-fork: the parent's calls"
assert_contains "$T/rec.err" "process $child called exec" "--follow-fork: the child's exec"

echo q >&$TWIN_CMD
exec {TWIN_CMD}>&-
wait $TWIN || fail "the twin failed"
echo "ok"
