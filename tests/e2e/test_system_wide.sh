#!/usr/bin/env bash
# record -a: a system-wide session traces every process that runs the probed module, also those
# started after it began. Three attach_loop processes (one started before the session, two
# after) each get their own pid_<PID>/ with exact counts; one that quits during the session is
# finalized then ("target exited") while the others end with the session ("signal");
# session.json lists all three; --comm narrows the session to processes of one name.
# Synchronisation: attach_loop reads commands from a FIFO and answers "done K" on another, and
# the recorder opens its --ready-file FIFO once the probes are attached.
source "$(dirname "$0")/lib.sh"
need_bpf
APP=$T/attach_loop
cp "$TARGETS/attach_loop" "$APP"
ln "$APP" "$T/alt_loop"         # same inode (so the same probes), another process name

declare -A CMD_FD OUT_FD PID
start_app() {   # name binary
	local n=$1
	mkfifo "$T/$n.cmd" "$T/$n.out"
	"$2" "$T/$n.cmd" >"$T/$n.out" &
	exec {OUT_FD[$n]}<"$T/$n.out"
	read -r -t 120 -u "${OUT_FD[$n]}" line
	PID[$n]=${line#pid }
	exec {CMD_FD[$n]}<>"$T/$n.cmd"     # attach_loop is now in its read loop
}
run_app() {     # name K: K calls of loop_work, and wait until they are done
	echo "$2" >&"${CMD_FD[$1]}"
	read -r -t 120 -u "${OUT_FD[$1]}" line
	assert_eq "done $2" "$line" "$1's answer"
}
quit_app() {
	echo q >&"${CMD_FD[$1]}"
	exec {CMD_FD[$1]}>&-
	wait "${PID[$1]}" || fail "$1 exited with an error"
}
start_recorder() {  # session-dir options...
	local dir=$1; shift
	rm -f "$T/ready"; mkfifo "$T/ready"
	"$ATF" record -a -f "$APP:loop_work" -o "$dir" --ready-file "$T/ready" "$@" 2>"$T/rec.err" &
	REC=$!
	timeout 120 cat "$T/ready" >/dev/null || { cat "$T/rec.err" >&2; fail "record -a $* did not attach within 120 s"; }
}
stop_recorder() {
	kill -INT $REC
	wait $REC || { cat "$T/rec.err" >&2; fail "record -a failed"; }
}
calls_of() {    # stats pid
	awk -v p="$2" '$1 == "call" && $2 == p && $3 == "loop_work" { print $4 }' "$1"
}

# ---- three processes, one from before the session -------------------------------------------
start_app first "$APP"
run_app first 1                  # before the session: not recorded
start_recorder "$T/s"
[ -f "$T/s/session.json" ] || fail "session.json is not written at the start"
start_app second "$APP"
start_app third "$APP"
run_app first 3
run_app second 5
# session.json is rewritten while the session runs (within ~100 ms of a new process): wait for it
listed() { jq -e --argjson p "$1" 'any(.processes[]; .pid == $p)' "$T/s/session.json" >/dev/null 2>&1; }
for _ in $(seq 100); do listed "${PID[second]}" && break; sleep 0.05; done
listed "${PID[second]}" || fail "session.json does not list a new process while the session runs"
run_app third 7
run_app second 2
quit_app third                   # exits during the session
stop_recorder
quit_app first
quit_app second

"$TOOLS/record_stats" "$T/s" >"$T/stats"
assert_eq "processes 3" "$(head -n 1 "$T/stats")" "process directories"
assert_eq 3 "$(calls_of "$T/stats" "${PID[first]}")" "calls of the process started before"
assert_eq 7 "$(calls_of "$T/stats" "${PID[second]}")" "calls of the second process"
assert_eq 7 "$(calls_of "$T/stats" "${PID[third]}")" "calls of the third process"
for n in first second third; do
	"$ATF" verify "$T/s/pid_${PID[$n]}" >/dev/null || fail "verify pid_${PID[$n]} ($n)"
	assert_eq "attach_loop" "$(jq -r .process_name "$T/s/pid_${PID[$n]}/manifest.json")" "$n's name"
	assert_eq "$APP $T/$n.cmd" "$(jq -r '.argv | join(" ")' "$T/s/pid_${PID[$n]}/manifest.json")" "$n's command line"
done
assert_eq "target exited" "$(jq -r .end_reason "$T/s/pid_${PID[third]}/manifest.json")" "end of the process that quit"
assert_eq "signal" "$(jq -r .end_reason "$T/s/pid_${PID[first]}/manifest.json")" "end of a process still running"

# session.json: every process directory with its pid, name, command line and counts
idx=$T/s/session.json
assert_eq "signal" "$(jq -r .end_reason "$idx")" "session end reason"
assert_eq 3 "$(jq -r .process_count "$idx")" "processes in session.json"
for n in first second third; do
	p=${PID[$n]}
	assert_eq "pid_$p" "$(jq -r --argjson p "$p" '.processes[] | select(.pid == $p) | .dir' "$idx")" "$n in session.json"
	assert_eq "attach_loop" "$(jq -r --argjson p "$p" '.processes[] | select(.pid == $p) | .comm' "$idx")" "$n's comm in session.json"
	assert_eq "$APP" "$(jq -r --argjson p "$p" '.processes[] | select(.pid == $p) | .cmdline[0]' "$idx")" "$n's cmdline in session.json"
done
assert_eq 6 "$(jq -r --argjson p "${PID[first]}" '.processes[] | select(.pid == $p) | .index_events' "$idx")" "events of the first process in session.json"
assert_eq "target exited" "$(jq -r --argjson p "${PID[third]}" '.processes[] | select(.pid == $p) | .end_reason' "$idx")" "end of the third in session.json"
# the first process started before the session: its manifest says when (from /proc/PID/stat)
start=$(jq -r .start_time "$T/s/pid_${PID[first]}/manifest.json")
[ "$(date -u -d "$start" +%s)" -le "$(date -u -d "$(jq -r .start_time "$idx")" +%s)" ] \
	|| fail "start_time $start of the first process is after the session's start"

# ---- --comm: only the processes named alt_loop -------------------------------------------------
start_app plain "$APP"
start_app alt "$T/alt_loop"
start_recorder "$T/c" --comm alt_loop
run_app plain 4
run_app alt 6
stop_recorder
quit_app plain
quit_app alt
"$TOOLS/record_stats" "$T/c" >"$T/stats"
assert_eq "processes 1" "$(head -n 1 "$T/stats")" "process directories with --comm"
assert_eq 6 "$(calls_of "$T/stats" "${PID[alt]}")" "calls of alt_loop with --comm alt_loop"
assert_eq "" "$(calls_of "$T/stats" "${PID[plain]}")" "calls of attach_loop with --comm alt_loop"
"$ATF" verify "$T/c" >/dev/null || fail "verify the --comm session"

# ---- --pid-filter: only the process named --------------------------------------------------------
start_app p1 "$APP"
start_app p2 "$APP"
start_recorder "$T/p" --pid-filter "${PID[p2]}"
run_app p1 2
run_app p2 3
stop_recorder
quit_app p1
quit_app p2
"$TOOLS/record_stats" "$T/p" >"$T/stats"
assert_eq "processes 1" "$(head -n 1 "$T/stats")" "process directories with --pid-filter"
assert_eq 3 "$(calls_of "$T/stats" "${PID[p2]}")" "calls of the filtered process"

# ---- exec: the process goes on in its pid_<PID>/ as the new program --------------------------------
# fork_exec 4 2: the child calls child_work 4 times and execs /bin/true; the parent parent_work twice
start_recorder "$T/x" -f "$TARGETS/fork_exec:*_work"
"$TARGETS/fork_exec" 4 2 >/dev/null
stop_recorder
"$TOOLS/record_stats" "$T/x" >"$T/stats"
assert_eq "processes 2" "$(head -n 1 "$T/stats")" "process directories of fork_exec"
child=$(awk '$1 == "call" && $3 == "child_work" { print $2 }' "$T/stats")
[ -n "$child" ] || fail "no child_work calls"
assert_eq 4 "$(awk -v p="$child" '$1 == "call" && $2 == p && $3 == "child_work" { print $4 }' "$T/stats")" "child_work calls before the exec"
assert_eq "true" "$(jq -r .process_name "$T/x/pid_$child/manifest.json")" "the child's name after its exec"
assert_eq "true" "$(jq -r '.argv | join(" ")' "$T/x/pid_$child/manifest.json")" "the child's command line after its exec"
assert_eq "target exited" "$(jq -r .end_reason "$T/x/pid_$child/manifest.json")" "the child's end"
"$ATF" verify "$T/x" >/dev/null || fail "verify the fork_exec session"

# ---- argument rules --------------------------------------------------------------------------
"$ATF" record -a -f loop_work -o "$T/bad" --duration 1 2>"$T/err" && fail "-a with a bare glob was accepted"
assert_contains "$T/err" "a system-wide session has no main executable; name the module" "bare glob with -a"
"$ATF" record -a -p $$ -f "$APP:loop_work" 2>"$T/err" && fail "-a with -p was accepted"
assert_contains "$T/err" "^atftrace record: -a traces every process" "-a with -p"
"$ATF" record --comm x -- /bin/true 2>"$T/err" && fail "--comm without -a was accepted"
assert_contains "$T/err" "narrow a system-wide session: add -a" "--comm without -a"
"$ATF" record -a -f "$APP:loop_work" --pid-filter 12,x 2>"$T/err" && fail "a bad --pid-filter was accepted"
assert_contains "$T/err" "--pid-filter: '12,x' is not a list of process ids" "bad --pid-filter"
echo ok
