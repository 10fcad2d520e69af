#!/usr/bin/env bash
# debuginfod servers that misbehave (a small HTTP server of this test's on 127.0.0.1 only):
#   silent     accepts and never answers       -> list-functions ends within DEBUGINFOD_TIMEOUT,
#                                                 one line says the servers are skipped, and the
#                                                 next module does not ask again
#   huge       announces 3 GB                   -> refused at DEBUGINFOD_MAXSIZE, one line
#   endless    sends zeros without a length     -> refused at DEBUGINFOD_MAXSIZE, one line
#   wrong      a debug file of another build-id -> refused, one line, and gone from the cache
# After each, the client cache holds no file for the build-id. The defaults (no variable set)
# are the ones the README gives.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v python3 >/dev/null || fail "needs python3 (scripts/deps.sh installs it)"
[ -e /usr/lib/x86_64-linux-gnu/libdebuginfod.so.1 ] || [ -e /usr/lib/aarch64-linux-gnu/libdebuginfod.so.1 ] ||
	fail "libdebuginfod is not installed (scripts/deps.sh)"
SRV=
cleanup() {
	[ -z "$SRV" ] || { kill $SRV 2>/dev/null || true; wait $SRV 2>/dev/null || true; }
	rm -rf "$T"
}
trap cleanup EXIT

# a stripped program whose names only a debug file has, and one of another build
cp "$TARGETS/debug_funcs" "$T/prog"
strip --strip-all "$T/prog"
BUILD_ID=$(readelf -n "$T/prog" | awk '/Build ID/ { print $3 }')
[ ${#BUILD_ID} = 40 ] || fail "debug_funcs has no build-id"
gcc -g -O1 -fno-inline -DSTALE=1 -o "$T/other" "$ROOT/tests/targets/debug_funcs.c" -Wl,--build-id=sha1
objcopy --only-keep-debug "$T/other" "$T/wrong.debug"
# a second stripped module with its own build-id, to see that a skipped server is not asked again
gcc -O1 -o "$T/prog2" "$ROOT/tests/targets/debug_funcs.c" -Wl,--build-id=sha1 -DSTALE=2
strip --strip-all "$T/prog2"

cat >"$T/server.py" <<'PY'
import socket, sys, threading
mode, portfile, wrong = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
open(portfile + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(portfile + ".tmp", portfile)
held = []
def serve(c):
    try:
        c.recv(65536)
        if mode == "silent":
            held.append(c)          # never a byte back, never closed
            return
        if mode == "wrong":
            body = open(wrong, "rb").read()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        else:
            head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
            head += b"Content-Length: 3000000000\r\n\r\n" if mode == "huge" else b"\r\n"
            c.sendall(head)
            zeros = b"\0" * 65536
            while True:
                c.sendall(zeros)
    except OSError:
        pass
    if mode != "silent":
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY

start_server() {   # MODE
	[ -z "$SRV" ] || { kill $SRV; wait $SRV 2>/dev/null || true; }
	rm -f "$T/port"
	python3 "$T/server.py" "$1" "$T/port" "$T/wrong.debug" &
	SRV=$!
	timeout 30 bash -c 'until [ -s "$1" ]; do sleep 0.05; done' _ "$T/port" || fail "the $1 server did not start"
	export DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$T/port") DEBUGINFOD_CACHE_PATH=$T/cache-$1
}
# lf WHAT MAX_SECONDS FILES...: list-functions of FILES, bounded, in no more than MAX_SECONDS
lf() {
	local what=$1 max=$2 t0=$SECONDS rc=0; shift 2
	local args=(-f 'dbg_*')
	for f in "$@"; do args+=(-f "$f:dbg_*"); done
	timeout 300 "$ATF" list-functions "${args[@]}" "$T/prog" >"$T/$what.lf" 2>"$T/$what.err" || rc=$?
	[ $rc -ne 124 ] || fail "$what: list-functions still ran after 300 s"
	[ $((SECONDS - t0)) -le $max ] || fail "$what: list-functions took $((SECONDS - t0)) s, more than $max"
	if grep -qE ' (selected|unmatched) +dbg_' "$T/$what.lf"; then fail "$what: a debug file was used"; fi
}
nothing_cached() {   # WHAT: the cache has no file left for the build-id
	local left
	left=$(find "$DEBUGINFOD_CACHE_PATH" -path "*$BUILD_ID*" -type f 2>/dev/null || true)
	assert_eq "" "$left" "$1: files left in the client cache"
}

# ---- silent: DEBUGINFOD_TIMEOUT=2, two modules; the second is not asked for ------------------------
start_server silent
DEBUGINFOD_TIMEOUT=2 lf silent 15 "$T/prog2"
assert_contains "$T/silent.err" "^atftrace: debuginfod: $DEBUGINFOD_URLS: no answer for 2 s \(DEBUGINFOD_TIMEOUT\): skipped for the rest of this run$" "silent: the skip line"
assert_eq 1 "$(grep -c 'debuginfod' "$T/silent.err")" "silent: one line about debuginfod"
nothing_cached silent
# the default bound, without DEBUGINFOD_TIMEOUT: 10 s
lf silent-default 40
assert_contains "$T/silent-default.err" "no answer for 10 s \(DEBUGINFOD_TIMEOUT\)" "silent: the default timeout"

# ---- huge and endless: DEBUGINFOD_MAXSIZE=1000000 --------------------------------------------------
for mode in huge endless; do
	start_server $mode
	DEBUGINFOD_MAXSIZE=1000000 lf $mode 60
	assert_contains "$T/$mode.err" "^atftrace: debuginfod: $DEBUGINFOD_URLS: the debug file of build-id $BUILD_ID is larger than 1000000 bytes \(DEBUGINFOD_MAXSIZE\): not downloaded$" "$mode: the size line"
	nothing_cached $mode
done
# the default cap, without DEBUGINFOD_MAXSIZE: 1 GiB, so the 3 GB announced are refused
start_server huge
lf huge-default 60
assert_contains "$T/huge-default.err" "is larger than 1073741824 bytes \(DEBUGINFOD_MAXSIZE\)" "huge: the default cap"
nothing_cached huge-default

# ---- wrong: another build-id's debug file is refused and removed -----------------------------------
start_server wrong
lf wrong 60
assert_contains "$T/wrong.err" "^atftrace: debuginfod: .*: not the debug file asked for \(another build-id\): removed from the cache$" "wrong: the refusal line"
nothing_cached wrong
echo ok
