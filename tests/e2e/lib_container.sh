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
	read -r -t 120 -u "${OUT_FD[$n]}" line || { cat "$T/$n.err" >&2; fail "$n did not start"; }
	assert_eq "pid 1" "$line" "$n's pid inside its namespace"
	exec {CMD_FD[$n]}<>"$root/$n.cmd"
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
	read -r -t 120 -u "${OUT_FD[$n]}" line
	PID[$n]=${line#pid }
	exec {CMD_FD[$n]}<>"$T/$n.cmd"
}

run_app() {     # NAME K: K calls of loop_work, and wait until they are done
	local line
	echo "$2" >&"${CMD_FD[$1]}"
	read -r -t 120 -u "${OUT_FD[$1]}" line
	assert_eq "done $2" "$line" "$1's answer"
}

quit_app() {
	[ -n "${CMD_FD[$1]:-}" ] || return 0
	echo q >&"${CMD_FD[$1]}" 2>/dev/null || true
	exec {CMD_FD[$1]}>&- {OUT_FD[$1]}<&-
	CMD_FD[$1]=
}

# start_recorder DIR ARGS...: record in the background until the probes are attached
start_recorder() {
	local dir=$1; shift
	rm -f "$T/ready"; mkfifo "$T/ready"
	"$ATF" record -o "$dir" --ready-file "$T/ready" "$@" 2>"$T/rec.err" &
	REC=$!
	# a recorder that fails never opens the FIFO: give up after a bound, with its error
	timeout 120 cat "$T/ready" >/dev/null || { cat "$T/rec.err" >&2; fail "record $* did not attach"; }
}

stop_recorder() {
	kill -INT $REC
	wait $REC || { cat "$T/rec.err" >&2; fail "record $* failed"; }
}

calls_of() {    # STATS PID: calls of attach_loop's loop_work
	calls_to "$1" "$2" loop_work
}

# check_contained DIR K BOX OTHER FUNCTION: session DIR has only the process BOX (pid 1 of its
# container), with K calls of FUNCTION, and none of the process OTHER outside the container
check_contained() {
	local man=$1/pid_$3/manifest.json
	"$TOOLS/record_stats" "$1" >"$T/stats"
	assert_eq "processes 1" "$(head -n 1 "$T/stats")" "$1: process directories"
	assert_eq "$2" "$(calls_to "$T/stats" "$3" "$5")" "$1: calls inside the container"
	assert_eq "" "$(calls_to "$T/stats" "$4" "$5")" "$1: calls outside the container"
	"$ATF" verify "$1" >/dev/null || fail "verify $1"
	assert_eq "$3" "$(jq -r .pid "$man")" "$1: host pid in the manifest"
	assert_eq 1 "$(jq -r .ns_pid "$man")" "$1: pid inside the container in the manifest"
	assert_eq 1 "$(jq -r '.threads[0].ns_tid' "$man")" "$1: tid inside the container"
	assert_eq "$3" "$(jq -r '.threads[0].tid' "$man")" "$1: host tid"
}

calls_to() {    # STATS PID FUNCTION...: CALL count of the first FUNCTION (or alias) that has one
	local stats=$1 pid=$2; shift 2
	awk -v p="$pid" -v names=" $* " '$1 == "call" && $2 == p && index(names, " " $3 " ") { print $4; exit }' "$stats"
}

# ---- podman: real containers ------------------------------------------------------------------
# A podman test holds a machine-wide lock (tests in other work trees may run at the same time),
# runs podman with its own containers.conf (runc and cgroupfs, which this machine's hybrid cgroups
# need; nofile/nproc limits under the hard limits) instead of the host's, gives its containers no
# network (--network none), and on exit removes every pod, container, volume, network and image
# that appeared while it ran.
PODMAN_LOCK=/run/lock/atftrace-podman-tests.lock

# need_podman: fail without podman (deps.sh installs it), then lock, configure and snapshot.
need_podman() {
	local c
	for c in podman runc catatonit; do
		command -v $c >/dev/null || fail "$c is not installed (scripts/deps.sh installs it)"
	done
	exec {PODMAN_LOCK_FD}>"$PODMAN_LOCK"
	flock -w 1800 "$PODMAN_LOCK_FD" || fail "$PODMAN_LOCK: another podman test held it for 30 minutes"
	cat >"$T/containers.conf" <<-'CONF'
	[containers]
	default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
	log_driver = "k8s-file"
	[engine]
	runtime = "runc"
	cgroup_manager = "cgroupfs"
	events_logger = "file"
	CONF
	export CONTAINERS_CONF=$T/containers.conf
	podman_objects >"$T/podman.before"
}

podman_objects() {   # one "KIND ID" line per pod, container, volume, network, image and image name
	podman pod ps -q --no-trunc | sed 's/^/pod /'
	podman ps -a -q --no-trunc | sed 's/^/container /'
	podman volume ls -q | sed 's/^/volume /'
	podman network ls -q | sed 's/^/network /'
	podman images -a -q --no-trunc | sed 's/^/image /'
	podman images -a --format '{{.Repository}}:{{.Tag}}' | sed -n '/<none>/!s/^/name /p'
}

podman_new() {       # KIND: the ids of that kind that appeared since need_podman
	comm -13 <(grep "^$1 " "$T/podman.before" | sort -u) <(podman_objects | grep "^$1 " | sort -u) | cut -d' ' -f2
}

# podman_cleanup: remove what the test made (for its EXIT trap); exit 1 if anything stays
podman_cleanup() {
	local ids left
	[ -f "$T/podman.before" ] || return 0
	ids=$(podman_new pod); [ -z "$ids" ] || podman pod rm -f -t 0 $ids >/dev/null 2>&1 || true
	ids=$(podman_new container); [ -z "$ids" ] || podman rm -f -v -t 0 $ids >/dev/null 2>&1 || true
	ids=$(podman_new volume); [ -z "$ids" ] || podman volume rm -f $ids >/dev/null 2>&1 || true
	ids=$(podman_new network); [ -z "$ids" ] || podman network rm -f $ids >/dev/null 2>&1 || true
	# a name given to an image that was there before only loses that name
	ids=$(podman_new name); [ -z "$ids" ] || podman rmi $ids >/dev/null 2>&1 || true
	# images after their children: a few rounds remove a chain of layers from the top
	for _ in 1 2 3 4 5 6; do
		ids=$(podman_new image); [ -z "$ids" ] && break
		podman rmi -f $ids >/dev/null 2>&1 || true
	done
	left=$(for k in pod container volume network image name; do podman_new $k; done)
	rm -f "$T/podman.before"
	if [ -n "$left" ]; then
		echo "FAIL: podman objects left behind: $left" >&2
		exit 1
	fi
}

# wait_log CONTAINER TEXT: wait (at most 120 s) until the container's output has a line with TEXT
wait_log() {
	local line lp
	coproc LOGS { exec podman logs -f "$1" 2>&1; }
	lp=$LOGS_PID
	while IFS= read -r -t 120 line <&"${LOGS[0]}"; do
		[[ $line == *"$2"* ]] && { kill "$lp" 2>/dev/null; wait "$lp" 2>/dev/null; return 0; }
	done
	kill "$lp" 2>/dev/null || true
	podman logs "$1" 2>&1 | sed 's/^/  | /' >&2
	fail "$1: no line with '$2' in its output"
}

# app_image TAG: a test app image FROM debian:12-slim holding pod_app as /usr/local/bin/app,
# which makes its FIFOs in /tmp (the base image is made first when podman has none)
app_image() {
	mkdir -p "$T/app-image"
	cp "$TARGETS/pod_app" "$T/app-image/app"
	cat >"$T/app-image/Containerfile" <<-'EOF2'
	FROM debian:12-slim
	COPY app /usr/local/bin/app
	ENTRYPOINT ["/usr/local/bin/app", "/tmp"]
	EOF2
	bash "$ROOT/scripts/base-image.sh" "$T/app-image/Containerfile"
	podman build -q --network none -t "$1" "$T/app-image" >/dev/null
}

# open_app NAME HOSTPID DIR: talk to a pod_app (run_app/quit_app) through its FIFOs in DIR, a
# path inside the root of HOSTPID; PID[NAME] is HOSTPID
open_app() {
	exec {CMD_FD[$1]}<>"/proc/$2/root$3/cmd"
	exec {OUT_FD[$1]}<"/proc/$2/root$3/out"
	PID[$1]=$2
}

# start_twin NAME EXE: EXE (a pod_app) run on the host, outside any container, with its FIFOs in
# $T/NAME; answers like open_app
start_twin() {
	local n=$1 line fd
	mkdir -p "$T/$n"
	mkfifo "$T/$n.log"
	"$2" "$T/$n" >"$T/$n.log" &
	exec {fd}<"$T/$n.log"
	read -r -t 60 line <&"$fd" || fail "$n did not start"
	assert_eq ready "$line" "$n's first line"
	open_app "$n" $! "$T/$n"
}

# container_pid CONTAINER: its main process's host pid
container_pid() {
	podman inspect -f '{{.State.Pid}}' "$1"
}
