# Helpers of the registration-guard tests (test_record_guard_*.sh); source after lib.sh.
# The target is a private copy of guard_loop, so that only this test's processes run it and
# another test's uprobes on guard_loop cannot stop it.
GL=$T/gl
cp "$TARGETS/guard_loop" "$GL" || fail "build first: make OUTPUT=$OUTPUT targets"
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"

# guard_record NAME ARGS...: record the launched command ARGS (gl_* functions, -v) into $T/NAME,
# its stderr in $T/NAME.err, the target's output in $T/NAME.out; sets REC. The caller waits for
# the target's READY file.
guard_record() {
	local name=$1; shift
	"$ATF" record --trampolines -v -o "$T/$name" -f 'gl_*' -- "$@" 2>"$T/$name.err" >"$T/$name.out" &
	REC=$!
}

# guard_record_pid NAME PID: record -p PID likewise; returns once the recording is ready.
guard_record_pid() {
	local name=$1 pid=$2
	mkfifo "$T/$name.ready"
	"$ATF" record --trampolines -v -p "$pid" -o "$T/$name" -f 'gl_*' --ready-file "$T/$name.ready" \
		2>"$T/$name.err" &
	REC=$!
	timeout 60 cat "$T/$name.ready" >/dev/null || { cat "$T/$name.err" >&2; fail "$name: record -p never became ready"; }
}

# wait_file FILE WHAT: until FILE exists (bounded)
wait_file() {
	timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.05; done' _ "$1" || fail "$2: no $1 after 60 s"
}

# launched_pid NAME: the pid of the command that guard_record NAME launched
launched_pid() { sed -n 's/^atftrace record: launched \([0-9]*\):.*/\1/p' "$T/$1.err"; }

# proc_state PID: its state letter in /proc/PID/stat (R, S, T, Z, ...)
proc_state() { awk '{ print $3 }' /proc/"$1"/stat 2>/dev/null || echo gone; }

# wait_state PID STATE WHAT: until PID is in STATE (bounded)
wait_state() {
	timeout 60 bash -c 'until [ "$(awk "{ print \$3 }" /proc/"$1"/stat 2>/dev/null)" = "$2" ]; do sleep 0.01; done' \
		_ "$1" "$2" || fail "$3: process $1 is in state $(proc_state "$1"), not $2"
}

# count_lines FILE PATTERN: how many lines of FILE match PATTERN
count_lines() { grep -cE -- "$2" "$1" || true; }
