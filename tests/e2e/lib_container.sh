# Helpers for the container tests (source after lib.sh): a "container" is attach_loop run by
# `unshare --pid --mount --fork chroot ROOT`, in its own cgroup, with a root built from a copy
# of the target and the libraries ldd lists. attach_loop reads commands from a FIFO inside the
# root and answers "done K" on a FIFO the test reads, so nothing waits on a sleep.

# make_root DIR: DIR/app (attach_loop) and its libraries at their paths
make_root() {
	local root=$1 lib
	mkdir -p "$root"
	cp "$TARGETS/attach_loop" "$root/app"
	for lib in $(ldd "$TARGETS/attach_loop" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

# cgroup_v2_root: the v2 hierarchy's mount (hybrid: /sys/fs/cgroup/unified), or skip
cgroup_v2_root() {
	if [ -f /sys/fs/cgroup/unified/cgroup.procs ]; then
		echo /sys/fs/cgroup/unified
	elif [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo /sys/fs/cgroup
	else
		skip "no cgroup v2 hierarchy"
	fi
}

declare -A CMD_FD OUT_FD PID
# start_contained NAME ROOT CGROUP-DIR...: run ROOT/app as pid 1 of a new pid namespace, chrooted
# into ROOT, in each cgroup given; PID[NAME] is its host pid.
start_contained() {
	local n=$1 root=$2 line p; shift 2
	mkfifo "$root/$n.cmd" "$T/$n.out"
	(
		for cg in "$@"; do echo $BASHPID >"$cg/cgroup.procs"; done
		exec unshare --pid --mount --fork chroot "$root" /app "/$n.cmd"
	) >"$T/$n.out" 2>"$T/$n.err" &
	exec {OUT_FD[$n]}<"$T/$n.out"
	read -r -u "${OUT_FD[$n]}" line || { cat "$T/$n.err" >&2; fail "$n did not start"; }
	assert_eq "pid 1" "$line" "$n's pid inside its namespace"
	exec {CMD_FD[$n]}>"$root/$n.cmd"
	for p in $(cat "$1/cgroup.procs"); do
		[ "$(awk '/^NSpid:/ { print NF, $NF }' "/proc/$p/status")" = "3 1" ] && PID[$n]=$p
	done
	[ -n "${PID[$n]:-}" ] || fail "$n: no process with pid 1 in its namespace in $1"
}

# start_plain NAME BINARY: the same program outside any container
start_plain() {
	local n=$1 line
	mkfifo "$T/$n.cmd" "$T/$n.out"
	"$2" "$T/$n.cmd" >"$T/$n.out" &
	exec {OUT_FD[$n]}<"$T/$n.out"
	read -r -u "${OUT_FD[$n]}" line
	PID[$n]=${line#pid }
	exec {CMD_FD[$n]}>"$T/$n.cmd"
}

run_app() {     # NAME K: K calls of loop_work, and wait until they are done
	local line
	echo "$2" >&"${CMD_FD[$1]}"
	read -r -u "${OUT_FD[$1]}" line
	assert_eq "done $2" "$line" "$1's answer"
}

quit_app() {
	[ -n "${CMD_FD[$1]:-}" ] || return 0
	echo q >&"${CMD_FD[$1]}" 2>/dev/null || true
	exec {CMD_FD[$1]}>&-
	CMD_FD[$1]=
}

# start_recorder DIR ARGS...: record in the background until the probes are attached
start_recorder() {
	local dir=$1; shift
	rm -f "$T/ready"; mkfifo "$T/ready"
	"$ATF" record -o "$dir" --ready-file "$T/ready" "$@" 2>"$T/rec.err" &
	REC=$!
	cat "$T/ready" >/dev/null
}

stop_recorder() {
	kill -INT $REC
	wait $REC || { cat "$T/rec.err" >&2; fail "record $* failed"; }
}

calls_of() {    # STATS PID
	awk -v p="$2" '$1 == "call" && $2 == p && $3 == "loop_work" { print $4 }' "$1"
}
