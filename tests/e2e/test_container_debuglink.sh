#!/usr/bin/env bash
# The debug files of a container's program are looked up inside its root, never on the host, and
# only regular files are read. Each "container" (pid and mount namespaces, chroot) runs a stripped
# attach_loop as /app whose names live only in a separate debug file; its root holds:
#   good     /app.debug    the right debug file (debuglink, CRC)       -> names from it
#   buildid  /usr/lib/debug/.build-id/xx/rest.debug, the right one     -> names from it
#   host     /app.debug -> $T/host/app.debug, the right file, but on the HOST only
#                                                                      -> never read: stripped
#   zero     /app.debug -> /dev/zero, a character device in the root   -> refused at once
#   fifo     /app.debug    a FIFO nobody writes                        -> refused at once
# The old lookup walked the host path of the container's directory: it read the host's file
# through the container's symlink, read /dev/zero forever and blocked in the FIFO's open.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_container.sh"
need_bpf
command -v unshare >/dev/null && command -v chroot >/dev/null || fail "needs unshare and chroot (scripts/deps.sh installs util-linux)"
command -v objcopy >/dev/null && command -v gcc >/dev/null || fail "needs objcopy and gcc (scripts/deps.sh)"
V2=$(cgroup_v2_root)
CG=$V2/atftrace-debuglink-$$     # one cgroup per box: start_contained finds its pid 1 there
BOXES="good buildid host zero fifo"
cleanup() {
	for b in $BOXES; do quit_app $b; done
	[ -z "${REC:-}" ] || kill $REC 2>/dev/null || true
	wait 2>/dev/null
	for b in $BOXES; do [ ! -d "$CG-$b" ] || rmdir "$CG-$b" || true; done
	rm -rf "$T"
}
trap cleanup EXIT
for b in $BOXES; do mkdir -p "$CG-$b"; done

# the program: without a build-id (debuglink by CRC), and with one (the .build-id directory)
gcc -g -O1 -pthread -o "$T/nobid" "$ROOT/tests/targets/attach_loop.c" -Wl,--build-id=none
gcc -g -O1 -pthread -o "$T/bid" "$ROOT/tests/targets/attach_loop.c" -Wl,--build-id=sha1
# strip_into ROOT BINARY: ROOT/app stripped with a debuglink to app.debug; the debug file in $T/ROOTNAME.debug
strip_into() {
	local root=$1 bin=$2 dbg=$T/$(basename "$1").debug
	make_root "$root"
	objcopy --only-keep-debug "$bin" "$dbg"
	cp "$bin" "$root/app"
	strip --strip-all "$root/app"
	cp "$dbg" "$root/app.debug"
	(cd "$root" && objcopy --add-gnu-debuglink=app.debug app)
	rm "$root/app.debug"
}
for b in $BOXES; do
	if [ $b = buildid ]; then strip_into "$T/$b" "$T/bid"; else strip_into "$T/$b" "$T/nobid"; fi
done
cp "$T/good.debug" "$T/good/app.debug"
BID=$(readelf -n "$T/bid" | awk '/Build ID/ { print $3 }')
[ ${#BID} = 40 ] || fail "no build-id in $T/bid"
mkdir -p "$T/buildid/usr/lib/debug/.build-id/${BID:0:2}"
cp "$T/buildid.debug" "$T/buildid/usr/lib/debug/.build-id/${BID:0:2}/${BID:2}.debug"
mkdir -p "$T/host-side"
cp "$T/host.debug" "$T/host-side/app.debug"
ln -s "$T/host-side/app.debug" "$T/host/app.debug"
mkdir -p "$T/zero/dev"
mknod "$T/zero/dev/zero" c 1 5
ln -s /dev/zero "$T/zero/app.debug"
mkfifo "$T/fifo/app.debug"
for b in $BOXES; do start_contained $b "$T/$b" "$CG-$b"; done

# list BOX: list-functions -p of the box's program, bounded (the old lookup never returned)
list() {
	local rc=0 t0=$SECONDS
	timeout 60 "$ATF" list-functions -p "${PID[$1]}" -f loop_work >"$T/$1.lf" 2>"$T/$1.err" || rc=$?
	[ $rc -ne 124 ] || fail "$1: list-functions still ran after 60 s"
	[ $rc -eq 0 ] || { cat "$T/$1.err" >&2; fail "$1: list-functions exit $rc"; }
	[ $((SECONDS - t0)) -le 30 ] || fail "$1: list-functions took $((SECONDS - t0)) s"
}
origin() { awk '$NF == "loop_work" { print $3 }' "$T/$1.lf"; }

list good
assert_eq debuglink "$(origin good)" "good: loop_work named by the root's /app.debug"
list buildid
assert_eq build-id "$(origin buildid)" "buildid: loop_work named by the root's /usr/lib/debug/.build-id"
for b in host zero fifo; do
	list $b
	assert_eq "" "$(origin $b)" "$b: loop_work named by a file outside the root or not a regular file"
	assert_contains "$T/$b.err" "app: stripped, and no debug file with build-id \(none\) was found" "$b: the stripped line"
done

# record -p uses the same lookup: exact calls of loop_work through the root's debug file
start_recorder "$T/s" -p "${PID[good]}" -f loop_work
run_app good 7
stop_recorder
"$TOOLS/record_stats" "$T/s" >"$T/stats"
assert_eq 7 "$(calls_of "$T/stats" "${PID[good]}")" "record -p good: loop_work calls"
# and refuses the host's file as list-functions does
rc=0
timeout 60 "$ATF" record -p "${PID[host]}" -f loop_work -o "$T/h" --duration 1 2>"$T/h.err" || rc=$?
[ $rc -ne 124 ] || fail "record -p host: still ran after 60 s"
assert_contains "$T/h.err" "app: stripped, and no debug file with build-id \(none\) was found" "record -p host: stripped"
echo ok
