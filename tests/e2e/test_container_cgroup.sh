#!/usr/bin/env bash
# Containers traced from outside. A "container" (its own pid and mount namespaces, chrooted into
# a root holding a copy of attach_loop and its libraries) sits in its own cgroup, named like a
# docker scope so --container finds it. The same file runs outside the cgroup too, so the probes
# fire in both and only the BPF cgroup filter tells them apart:
#   -a --cgroup DIR          v2, the container's own cgroup (level 2 here)
#   -a --cgroup PARENT       v2, its parent: descendants count
#   -a --container ID        the docker-<ID>.scope cgroup, found through /proc/*/cgroup
#   -a --cgroup V1DIR        a v1 controller's hierarchy (pids), on hybrid machines
#   --container ID -p 1      one process by its pid inside the container (the sidecar case)
# Each records exactly the container's calls, none of the outside process; the manifest has
# the host pid and the pid inside the namespace (1).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_container.sh"
need_bpf
command -v unshare >/dev/null && command -v chroot >/dev/null || fail "needs unshare and chroot (scripts/deps.sh installs util-linux)"
V2=$(cgroup_v2_root)
ID=$(echo "atftrace-test-$$" | sha256sum | cut -c1-64)
PARENT=$V2/atftrace-test-$$
CG=$PARENT/docker-$ID.scope
V1=
[ "$(stat -f -c %T /sys/fs/cgroup/pids 2>/dev/null)" = cgroupfs ] && V1=/sys/fs/cgroup/pids/atftrace-test-$$

cleanup() {
	quit_app box; quit_app host
	wait 2>/dev/null
	for d in "$CG" "$PARENT" ${V1:+"$V1"}; do [ -d "$d" ] && rmdir "$d"; done
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$CG" ${V1:+"$V1"}

R=$T/root
make_root "$R"
start_contained box "$R" "$CG" ${V1:+"$V1"}
start_plain host "$R/app"           # the same inode, outside the cgroup
BOX=${PID[box]}

# check_session DIR K: only the container's process, with K calls, host pid and ns pid 1
check_session() { check_contained "$1" "$2" "$BOX" "${PID[host]}" loop_work; }

# ---- -a --cgroup: the container's own cgroup --------------------------------------------------
start_recorder "$T/s1" -a -f "$R/app:loop_work" --cgroup "$CG"
run_app box 5
run_app host 7
stop_recorder
check_session "$T/s1" 5
assert_eq 1 "$(jq -r --argjson p "$BOX" '.processes[] | select(.pid == $p) | .ns_pid' "$T/s1/session.json")" "ns pid in session.json"
assert_contains "$T/rec.err" "system-wide, cgroup $CG" "the cgroup is named"

# ---- -a --cgroup PARENT: its descendants too ----------------------------------------------
start_recorder "$T/s2" -a -f "$R/app:loop_work" --cgroup "$PARENT"
run_app host 1
run_app box 2
stop_recorder
check_session "$T/s2" 2

# ---- -a --container ID (a 12-digit prefix names it too) ---------------------------------------
start_recorder "$T/s3" -a -f "$R/app:loop_work" --container "${ID:0:12}"
run_app box 3
run_app host 4
stop_recorder
check_session "$T/s3" 3
assert_contains "$T/rec.err" "cgroup $CG" "--container resolved to its cgroup"

# ---- -a --cgroup on a v1 controller's hierarchy ----------------------------------------------
if [ -n "$V1" ]; then
	start_recorder "$T/s4" -a -f "$R/app:loop_work" --cgroup "$V1"
	run_app box 4
	run_app host 2
	stop_recorder
	check_session "$T/s4" 4
fi

# ---- --container ID -p 1: one process, by its pid inside the container --------------------------
start_recorder "$T/s5" --container "$ID" -p 1 -f loop_work
run_app host 3
run_app box 6
stop_recorder
check_session "$T/s5" 6
assert_contains "$T/rec.err" "attached to $BOX" "-p 1 in the container is host pid $BOX"
assert_eq "/app" "$(jq -r .argv[0] "$T/s5/pid_$BOX/manifest.json")" "command line inside the container"

# ---- errors ----------------------------------------------------------------------------------
"$ATF" record -a -f "$R/app:loop_work" --container 0123456789abcdef0123 2>"$T/err" && fail "an unknown container was accepted"
assert_contains "$T/err" "^atftrace record: --container 0123456789abcdef0123: no running process belongs to it$" "unknown container"
"$ATF" record -a -f "$R/app:loop_work" --cgroup "$T" 2>"$T/err" && fail "a non-cgroup directory was accepted"
assert_contains "$T/err" "not a directory of a cgroup filesystem" "--cgroup outside cgroupfs"
"$ATF" record --container "$ID" -p 99 -f loop_work 2>"$T/err" && fail "a pid not in the container was accepted"
assert_contains "$T/err" "^atftrace record: -p 99: no process of container $ID has that pid" "-p NSPID not in the container"
echo ok
