#!/usr/bin/env bash
# Symbols of a stripped program from wherever a debugger finds them, each time with exact counts:
# its .gnu_debuglink (beside it, in .debug/), a .build-id directory (--debug-dir), and a real
# debuginfod server (Debian's, on 127.0.0.1 over a directory, its own client cache). A debug file
# with another build-id is never used; without one, one line names the build-id.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v debuginfod >/dev/null || fail "debuginfod is not installed (scripts/deps.sh)"
N=25

# a stripped copy whose names live only in a separate debug file
mk() {   # dir: $dir/debug_funcs (stripped, with a debuglink) and $dir/debug_funcs.debug
	mkdir -p "$1"
	cp "$TARGETS/debug_funcs" "$1/debug_funcs"
	objcopy --only-keep-debug "$1/debug_funcs" "$1/debug_funcs.debug"
	strip --strip-all "$1/debug_funcs"
	(cd "$1" && objcopy --add-gnu-debuglink=debug_funcs.debug debug_funcs)
}
BUILD_ID=$(readelf -n "$TARGETS/debug_funcs" | awk '/Build ID/ { print $3 }')
[ ${#BUILD_ID} = 40 ] || fail "debug_funcs has no build-id"

check() {   # session what
	"$ATF" verify "$1" >/dev/null || fail "$2: verify"
	"$TOOLS/record_stats" "$1" >"$T/stats"
	assert_eq $N "$(awk '$1 == "call" && $3 == "dbg_outer" { print $4 }' "$T/stats")" "$2: dbg_outer calls"
	assert_eq $((2 * N)) "$(awk '$1 == "call" && $3 == "dbg_inner" { print $4 }' "$T/stats")" "$2: dbg_inner calls"
	assert_eq 0 "$(awk '$1 == "process" { print $16 }' "$T/stats")" "$2: lost"
}
origin() {   # list-functions output, function -> where its name came from (third column)
	awk -v f="$2" '$NF == f { print $3 }' "$1"
}

# stripped, no debug file anywhere: one line with the build-id, and -f naming nothing is refused;
# with --allow-missing (a launched program may still exec one that matches) the empty session
# says why
mk "$T/bare"
rm "$T/bare/debug_funcs.debug"
rc=0; "$ATF" record -o "$T/s0" -f 'dbg_*' -- "$T/bare/debug_funcs" $N >/dev/null 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "record -f of a stripped program's names"
assert_contains "$T/err" "debug_funcs: stripped, and no debug file with build-id $BUILD_ID was found" "stripped line"
assert_contains "$T/err" "^atftrace record: -f dbg_\\*: .*debug_funcs has no function of that name" "-f refused"
"$ATF" record -o "$T/s0" --allow-missing -f 'dbg_*' -- "$T/bare/debug_funcs" $N >/dev/null 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "record --allow-missing of a stripped program"; }
assert_contains "$T/err" "debug_funcs: stripped, and no debug file with build-id $BUILD_ID was found" "stripped line"
assert_contains "$T/err" "debug_funcs: no probe-able function matches dbg_\\*" "nothing selected"
assert_contains "$T/err" "^atftrace record: warning: the session is empty: no function was attached" "empty session"
if "$ATF" list-functions -s -f 'dbg_*' "$T/bare/debug_funcs" 2>"$T/err" | grep -qE ' selected +dbg_'; then fail "a stripped program's dbg_* selected"; fi

# 1. debuglink, beside the file
mk "$T/beside"
"$ATF" list-functions -f 'dbg_*' "$T/beside/debug_funcs" >"$T/lf" 2>"$T/err"
assert_eq debuglink "$(origin "$T/lf" dbg_outer)" "origin of dbg_outer (beside)"
"$ATF" record -o "$T/s1" -f 'dbg_*' -- "$T/beside/debug_funcs" $N >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record (debuglink beside)"; }
check "$T/s1" "debuglink beside"
# ... and in .debug/
mk "$T/dotdebug"
mkdir "$T/dotdebug/.debug" && mv "$T/dotdebug/debug_funcs.debug" "$T/dotdebug/.debug/"
"$ATF" record -o "$T/s2" -f 'dbg_*' -- "$T/dotdebug/debug_funcs" $N >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record (debuglink in .debug/)"; }
check "$T/s2" "debuglink in .debug/"
# a debug file of another build of the program is refused even under the right name
mk "$T/stale"
gcc -g -O1 -fno-inline -DSTALE=1 -o "$T/other" "$ROOT/tests/targets/debug_funcs.c" -Wl,--build-id=sha1 -Wl,-z,norelro
objcopy --only-keep-debug "$T/other" "$T/stale/debug_funcs.debug"
"$ATF" list-functions -f 'dbg_*' "$T/stale/debug_funcs" >"$T/lf" 2>"$T/err" || true
[ -z "$(origin "$T/lf" dbg_outer)" ] || fail "a debug file with another build-id was used"

# 2. only under a .build-id directory (--debug-dir, the layout of /usr/lib/debug)
mk "$T/bid"
mkdir -p "$T/dbg/.build-id/${BUILD_ID:0:2}"
mv "$T/bid/debug_funcs.debug" "$T/dbg/.build-id/${BUILD_ID:0:2}/${BUILD_ID:2}.debug"
objcopy --remove-section=.gnu_debuglink "$T/bid/debug_funcs"
"$ATF" list-functions --debug-dir "$T/dbg" -f 'dbg_*' "$T/bid/debug_funcs" >"$T/lf" 2>"$T/err"
assert_eq debug-dir "$(origin "$T/lf" dbg_outer)" "origin of dbg_outer (.build-id)"
"$ATF" record --debug-dir "$T/dbg" -o "$T/s3" -f 'dbg_*' -- "$T/bid/debug_funcs" $N >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record (.build-id)"; }
check "$T/s3" ".build-id directory"

# 3. served only by a real debuginfod server over a directory
mk "$T/dfd"
mkdir "$T/srv" && mv "$T/dfd/debug_funcs.debug" "$T/srv/"
objcopy --remove-section=.gnu_debuglink "$T/dfd/debug_funcs"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$PORT" -d "$T/dfd.sqlite" -t 0 -g 0 "$T/srv" >"$T/dfd.log" 2>&1 &
DFD=$!
trap 'kill $DFD 2>/dev/null; wait $DFD 2>/dev/null; rm -rf "$T"' EXIT
# ready once it serves our build-id (its scan is done): asked over plain HTTP, so no client
# cache remembers a miss
for i in $(seq 600); do
	curl -sf -o /dev/null "http://127.0.0.1:$PORT/buildid/$BUILD_ID/debuginfo" && break
	kill -0 $DFD 2>/dev/null || { cat "$T/dfd.log" >&2; fail "debuginfod exited"; }
	sleep 0.1
done
curl -sf -o /dev/null "http://127.0.0.1:$PORT/buildid/$BUILD_ID/debuginfo" || fail "debuginfod never served the debug file"
export DEBUGINFOD_URLS=http://127.0.0.1:$PORT DEBUGINFOD_CACHE_PATH=$T/dcache
"$ATF" list-functions -f 'dbg_*' "$T/dfd/debug_funcs" >"$T/lf" 2>"$T/err"
assert_eq debuginfod "$(origin "$T/lf" dbg_outer)" "origin of dbg_outer (debuginfod)"
"$ATF" record -o "$T/s4" -f 'dbg_*' -- "$T/dfd/debug_funcs" $N >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record (debuginfod)"; }
check "$T/s4" "debuginfod"
echo "ok: debuglink, .debug/, .build-id and debuginfod: $N + $((2 * N)) calls each"
