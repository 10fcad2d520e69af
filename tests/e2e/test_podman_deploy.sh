#!/usr/bin/env bash
# deploy/ run for real with podman:
#   image      `make image` builds deploy/Containerfile (from debootstrap base images when no
#              registry serves debian:12); the image holds the binary, the sidecar entrypoint
#              and runtime libraries only, and runs.
#   sidecar    deploy/k8s/sidecar-pod.yaml played with `podman kube play`, a test app image in
#              place of registry.example/app: the sidecar finds the app by TARGET_COMM, attaches,
#              and SIGTERM (what Kubernetes sends each container before it ends the pod) finalizes
#              its session in the emptyDir volume, read back from the host, with the app's calls
#              counted exactly under its pid in the pod's shared namespace; the host then traces
#              the same pod's app with --container, exact counts; `podman kube down` removes pod
#              and volume. (podman 4.3's kube down ends the infra container, pid 1 of the shared
#              pid namespace, with the others: the sidecar dies of SIGKILL, so it is stopped first.)
#   daemonset  podman 4.3 can play neither a DaemonSet nor hostPID: the container the DaemonSet
#              runs on each node is run with the podman run options of its template's fields.
#              Its `-a -f libc.so.6:malloc` names the libc of the atftrace image, a file shared
#              with every image built on the same debian:12-slim layer, such as the app's: the
#              app's mallocs and frees are counted exactly.
#   schemas    both YAML files are valid against the Kubernetes schemas (kubernetes-models, npm).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_container.sh"
need_bpf
cleanup() {
	quit_app box
	wait 2>/dev/null
	podman_cleanup
	rm -rf "$T"
}
trap cleanup EXIT
need_podman

# ---- the Kubernetes schemas -------------------------------------------------------------------
node "$ROOT/tests/e2e/k8s_validate.mjs" "$OUT/npm" "$ROOT"/deploy/k8s/*.yaml >"$T/schema" ||
	{ cat "$T/schema" >&2; fail "deploy/k8s: not valid against the Kubernetes schemas"; }

# ---- image ------------------------------------------------------------------------------------
IMG=localhost/atftrace-test:$$
start=$SECONDS
make -C "$ROOT" --no-print-directory image IMAGE="$IMG" >"$T/image.log" 2>&1 ||
	{ tail -n 30 "$T/image.log" >&2; fail "make image"; }
echo "make image: $((SECONDS - start)) s"
size=$(podman image inspect -f '{{.Size}}' "$IMG")
slim=$(podman image inspect -f '{{.Size}}' debian:12-slim)
echo "image size: $size bytes (debian:12-slim: $slim)"
[ $((size - slim)) -lt $((30 << 20)) ] || fail "the image adds $((size - slim)) bytes to debian:12-slim: more than runtime libraries"
run_img() { podman run --rm --network none --entrypoint "$@"; }
assert_eq "atftrace $(git -C "$ROOT" describe --always --dirty)" "$(run_img /usr/local/bin/atftrace "$IMG" --version)" "the image's atftrace"
assert_eq "" "$(run_img sh "$IMG" -c 'ldd /usr/local/bin/atftrace | grep "not found"; command -v gcc cc clang make')" "missing libraries or build tools in the image"
run_img sh "$IMG" -c 'test -x /usr/local/bin/atftrace-sidecar' || fail "no sidecar entrypoint in the image"

APP=localhost/atftrace-test-app:$$
app_image "$APP"

# ---- sidecar pod ------------------------------------------------------------------------------
S=-$$
python3 "$ROOT/tests/e2e/kube_for_test.py" "$ROOT/deploy/k8s/sidecar-pod.yaml" "$T/pod.yaml" "$S" \
	registry.example/atftrace:latest="$IMG" registry.example/app:1.0="$APP"
POD=app-with-atftrace$S
podman kube play --network none "$T/pod.yaml" >"$T/play.log" 2>&1 || { cat "$T/play.log" >&2; fail "kube play the sidecar pod"; }
wait_log "$POD-app" ready
BOX=$(container_pid "$POD-app")
NSPID=$(awk '/^NSpid:/ { print $NF }' "/proc/$BOX/status")
wait_log "$POD-atftrace" "attached to $NSPID: 2 functions in 2 modules"
open_app box "$BOX" /tmp

run_app box 5
run_app box 3

# SIGTERM, as Kubernetes sends it: the sidecar finalizes and exits 0
podman stop -t 30 "$POD-atftrace" >/dev/null
assert_eq 0 "$(podman inspect -f '{{.State.ExitCode}}' "$POD-atftrace")" "the sidecar's exit status"
podman logs "$POD-atftrace" >"$T/sidecar.log" 2>&1
assert_contains "$T/sidecar.log" "ended by signal; output in /traces/session_" "the sidecar's summary"
# Its session is the app's, under the pid the sidecar sees (the pod's shared pid namespace),
# with every call the app made while it was attached.
VOL=$(podman volume inspect -f '{{.Mountpoint}}' "traces$S")
sessions=("$VOL"/session_*)
assert_eq 1 "${#sessions[@]}" "sessions in the emptyDir volume"
man=${sessions[0]}/pid_$NSPID/manifest.json
"$ATF" verify "${sessions[0]}" >/dev/null || fail "verify the sidecar's session"
assert_eq signal "$(jq -r .end_reason "$man")" "the sidecar session's end"
assert_eq "/usr/local/bin/app /usr/lib/x86_64-linux-gnu/libc.so.6" "$(jq -r '[.modules[].path] | join(" ")' "$man")" "modules the sidecar probed"
assert_eq "handle_request malloc" "$(jq -r '[.symbols[].name | sub("^__libc_"; "")] | sort | join(" ")' "$man")" "functions the sidecar probed"
"$TOOLS/record_stats" "${sessions[0]}" >"$T/stats"
assert_eq "processes 1" "$(head -n 1 "$T/stats")" "processes the sidecar recorded"
assert_eq 8 "$(calls_to "$T/stats" "$NSPID" handle_request)" "sidecar: handle_request calls in the app"
assert_eq 8 "$(calls_to "$T/stats" "$NSPID" malloc __libc_malloc)" "sidecar: malloc calls in the app"
assert_eq "$NSPID" "$(jq -r '.threads[0].tid' "$man")" "sidecar: the app's tid as the sidecar sees it"

# with the sidecar gone, the host traces the same app through --container: a pod's container,
# in cgroup libpod_parent/<POD ID>/libpod-<ID>
APP_ID=$(podman inspect -f '{{.Id}}' "$POD-app")
POD_ID=$(podman pod inspect -f '{{.Id}}' "$POD")
assert_eq "0::/libpod_parent/$POD_ID/libpod-$APP_ID" "$(grep '^0::' "/proc/$BOX/cgroup")" "a pod container's v2 cgroup"
start_recorder "$T/host" --container "$APP_ID" -p "$NSPID" -f 'handle_*' -f libc.so.6:malloc
run_app box 4
stop_recorder
"$TOOLS/record_stats" "$T/host" >"$T/stats"
assert_eq 4 "$(calls_to "$T/stats" "$BOX" handle_request)" "host: handle_request calls in the pod's app"
assert_eq 4 "$(calls_to "$T/stats" "$BOX" malloc __libc_malloc)" "host: malloc calls in the pod's app"
quit_app box

podman kube down "$T/pod.yaml" >/dev/null
podman pod exists "$POD" && fail "kube down left the pod"
podman volume exists "traces$S" && fail "kube down left the emptyDir volume"

# ---- daemonset: its pod's container, run by podman run ----------------------------------------------
# podman 4.3's kube play knows no DaemonSet and ignores hostPID (both came in later releases), so
# the container the DaemonSet runs on each node is run with the podman run options of its fields
# (hostPID, capabilities, user, hostPath mounts, grace period, image, args; any other field fails
# the conversion), its output on a test directory instead of /var/lib/atftrace.
mkdir -p "$T/node"
mapfile -t run_args < <(python3 "$ROOT/tests/e2e/kube_for_test.py" --podman-run "$ROOT/deploy/k8s/daemonset.yaml" - "$S" \
	registry.example/atftrace:latest="$IMG" /var/lib/atftrace="$T/node")
[ ${#run_args[@]} -gt 0 ] || fail "the daemonset's container as podman run options"
DS=$(podman run -d --network none "${run_args[@]}")
wait_log "$DS" "system-wide: 2 functions in 1 module; recording to /traces/node"
assert_eq "$(cat /proc/1/comm)" "$(podman exec "$DS" cat /proc/1/comm)" "pid 1 in the daemonset's container (hostPID)"
CTR=$(podman run -d --network none --name "atftrace-test-app$S" "$APP")
wait_log "$CTR" ready
APPPID=$(container_pid "$CTR")
open_app box "$APPPID" /tmp
run_app box 6
run_app box 4
podman stop "$DS" >/dev/null
assert_eq 0 "$(podman inspect -f '{{.State.ExitCode}}' "$DS")" "the daemonset container's exit status"
"$ATF" verify "$T/node/node" >/dev/null || fail "verify the daemonset's session"
"$TOOLS/record_stats" "$T/node/node" >"$T/stats"
assert_eq 10 "$(calls_to "$T/stats" "$APPPID" malloc __libc_malloc)" "daemonset: the app's mallocs"
assert_eq 10 "$(calls_to "$T/stats" "$APPPID" free __libc_free cfree)" "daemonset: the app's frees"
assert_eq app "$(jq -r --argjson p "$APPPID" '.processes[] | select(.pid == $p) | .comm' "$T/node/node/session.json")" "the app in session.json"
assert_eq 1 "$(jq -r --argjson p "$APPPID" '.processes[] | select(.pid == $p) | .ns_pid' "$T/node/node/session.json")" "the app's pid in its container"
assert_eq signal "$(jq -r .end_reason "$T/node/node/session.json")" "the daemonset session's end"
echo ok
