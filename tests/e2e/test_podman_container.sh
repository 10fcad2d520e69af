#!/usr/bin/env bash
# Tracing a real podman container from the host. The app (pod_app as /usr/local/bin/app in a test
# image FROM debian:12-slim) runs in a podman container (runc, cgroupfs); its twin, the very same
# file run through /proc/PID/root on the host, runs outside any container, so a probe on that
# file fires in both and only the container filters tell them apart:
#   --container ID -p 1        the app by its pid inside the container, with its own libc's malloc
#   -a --container ID12        system-wide on the app's file, narrowed to the container's cgroup
# Counts are exact and the twin has none. Podman's cgroup on this hybrid machine is
# libpod_parent/libpod-<ID> in every v1 hierarchy and in the v2 one (runc joins both), and
# --container must find the v2 one.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_container.sh"
need_bpf
DL=/tmp/atftrace-debuglink-$$     # one path, in the container and on the host
cleanup() {
	rm -rf "$DL"
	quit_app twin
	[ -n "${CTR:-}" ] && podman rm -f -t 0 "$CTR" >/dev/null 2>&1
	wait 2>/dev/null
	podman_cleanup
	rm -rf "$T"
}
trap cleanup EXIT
need_podman

APP=localhost/atftrace-test-app:$$
app_image "$APP"
CTR=$(podman run -d --network none --name "atftrace-test-$$" "$APP")
wait_log "$CTR" ready
BOX=$(container_pid "$CTR")
open_app box "$BOX" /tmp
start_twin twin "/proc/$BOX/root/usr/local/bin/app"
assert_eq app "$(cat "/proc/${PID[twin]}/comm")" "the twin's name"

# ---- podman's cgroup layout (cgroupfs manager, hybrid hierarchy) ---------------------------------
assert_eq "0::/libpod_parent/libpod-$CTR" "$(grep '^0::' "/proc/$BOX/cgroup")" "the container's v2 cgroup"
assert_eq "pids:/libpod_parent/libpod-$CTR" "$(grep -o 'pids:.*' "/proc/$BOX/cgroup")" "its v1 pids cgroup"
V2=$(cgroup_v2_root)

# check_session DIR K: the container's process only, K calls of handle_request, host pid and ns pid 1
check_session() { check_contained "$1" "$2" "$BOX" "${PID[twin]}" handle_request; }

# ---- --container ID -p 1: the app by its pid inside the container, its own libc ----------------
start_recorder "$T/s1" --container "$CTR" -p 1 -f 'handle_*' -f libc.so.6:malloc
run_app twin 2
run_app box 4
run_app box 3
run_app twin 5
stop_recorder
check_session "$T/s1" 7
assert_eq 7 "$(calls_to "$T/stats" "$BOX" malloc __libc_malloc)" "malloc calls in the container's libc"
assert_contains "$T/rec.err" "attached to $BOX: 2 functions in 2 modules" "-p 1 in the container is host pid $BOX"
assert_eq "/usr/local/bin/app" "$(jq -r '.modules[0].path' "$T/s1/pid_$BOX/manifest.json")" "module as the container names it"

# ---- -a --container ID (12-digit prefix): the app's file, system-wide, the twin filtered out -------
start_recorder "$T/s2" -a --container "${CTR:0:12}" -f "/proc/$BOX/root/usr/local/bin/app:handle_*"
run_app box 6
run_app twin 3
run_app box 1
stop_recorder
check_session "$T/s2" 7
assert_contains "$T/rec.err" "system-wide, cgroup $V2/libpod_parent/libpod-$CTR: 1 function in 1 module" "--container found podman's v2 cgroup"
assert_eq app "$(jq -r --argjson p "$BOX" '.processes[] | select(.pid == $p) | .comm' "$T/s2/session.json")" "comm in session.json"

# ---- without a filter the twin is traced too: the probe really fires outside the container --------
start_recorder "$T/s3" -a -f "/proc/$BOX/root/usr/local/bin/app:handle_*"
run_app box 2
run_app twin 3
stop_recorder
"$TOOLS/record_stats" "$T/s3" >"$T/stats"
assert_eq 2 "$(calls_to "$T/stats" "$BOX" handle_request)" "unfiltered: calls in the container"
assert_eq 3 "$(calls_to "$T/stats" "${PID[twin]}" handle_request)" "unfiltered: calls of the twin"

# ---- a stripped program in the container: its debug file is looked for inside the container's
# root, never at the same path on the host -------------------------------------------------------
cp "$TARGETS/pod_app" "$T/app"
objcopy --only-keep-debug "$T/app" "$T/app.debug"
strip --strip-all "$T/app"
(cd "$T" && objcopy --add-gnu-debuglink=app.debug app)
mkdir -p "/proc/$BOX/root$DL" "$DL"
cp "$T/app" "/proc/$BOX/root$DL/app"
cp "$T/app.debug" "$DL/app.debug"          # on the host only
lf_origin() {   # the origin list-functions -p gives handle_request in $DL/app
	"$ATF" list-functions -p "$BOX" -f "$DL/app:handle_*" >"$T/lf" 2>"$T/lf.err" || { cat "$T/lf.err" >&2; fail "list-functions $DL/app"; }
	awk '$NF == "handle_request" { print $3 }' "$T/lf"
}
assert_eq "" "$(lf_origin)" "handle_request named by the host's $DL/app.debug"
assert_contains "$T/lf.err" "$DL/app: stripped, and no debug file with build-id [0-9a-f]+ was found" "the stripped line"
rm "$DL/app.debug"
cp "$T/app.debug" "/proc/$BOX/root$DL/app.debug"    # in the container only
assert_eq debuglink "$(lf_origin)" "handle_request named by the container's $DL/app.debug"

# ---- a stopped container is gone: one clear error -------------------------------------------------
podman stop -t 0 "$CTR" >/dev/null
"$ATF" record -a -f "$TARGETS/pod_app:handle_request" --container "$CTR" 2>"$T/err" && fail "a stopped container was accepted"
assert_contains "$T/err" "^atftrace record: --container $CTR: no running process belongs to it$" "stopped container"
echo ok
