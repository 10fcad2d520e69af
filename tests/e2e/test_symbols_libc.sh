#!/usr/bin/env bash
# libc as Debian ships it (stripped; names in libc6-dbg's /usr/lib/debug/.build-id file):
#  - the ifunc strlen traces the implementation this CPU runs, launched and with -p: exact,
#    also in a private copy of libc whose choice is read in the target once it is loaded;
#  - that implementation (__strlen_avx2, __strlen_evex, ...) by its debug-symbol name: exact;
#  - _int_malloc (a local function only the debug file names) counted as bpftrace counts it,
#    both attached to the same process during the same commands.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
LIBC=$(readlink -f "$(ldd "$TARGETS/calls_libc" | awk '$1 == "libc.so.6" { print $3 }')")
[ -f "$LIBC" ] || fail "calls_libc does not link libc.so.6"
N=1234

# which implementation of strlen this CPU gets, as list-functions reads it from our own GOT
"$ATF" list-functions -s -f 'libc.so.6:strlen' "$TARGETS/calls_libc" >"$T/lf" 2>"$T/err" || { cat "$T/err" >&2; fail "list-functions strlen"; }
IMPL=$(awk '$NF ~ /^__strlen_/ && $(NF - 1) == "selected" { print $NF }' "$T/lf")
[ -n "$IMPL" ] || { cat "$T/lf" "$T/err" >&2; fail "strlen not resolved to a named implementation (libc6-dbg installed?)"; }
assert_eq build-id "$(awk -v f="$IMPL" '$NF == f { print $3 }' "$T/lf")" "origin of $IMPL"

one() {   # what -f...: record a launched calls_libc strlen N, print the calls of the one function
	local what=$1; shift
	"$ATF" record -o "$T/$what" "$@" -- "$TARGETS/calls_libc" strlen $N >/dev/null 2>"$T/err" \
		|| { cat "$T/err" >&2; fail "record $what"; }
	"$ATF" verify "$T/$what" >/dev/null || fail "verify $what"
	"$TOOLS/record_stats" "$T/$what" >"$T/stats"
	assert_eq 0 "$(awk '$1 == "process" { print $16 }' "$T/stats")" "$what: lost"
	awk '$1 == "call" { n += $4 } END { print n + 0 }' "$T/stats"
}
assert_eq $N "$(one ifunc -f 'libc.so.6:strlen')" "calls of the ifunc strlen"
assert_eq $N "$(one impl -f "libc.so.6:$IMPL")" "calls of $IMPL"
grep -q "is an ifunc" "$T/err" && fail "an ifunc was reported unresolved: $(cat "$T/err")"
# a private copy of libc, which atftrace does not map itself: its GOT is read in the target,
# after its loader relocated it and before any of its code ran (ld.so's debug-state hold);
# env runs the system's libc first, untraced since -f names the copy by path
mkdir "$T/plibc" && cp "$LIBC" "$T/plibc/"
"$ATF" record -o "$T/copy" -f "$T/plibc/libc.so.6:strlen" -- env LD_LIBRARY_PATH="$T/plibc" "$TARGETS/calls_libc" strlen $N \
	>/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record of a private libc"; }
assert_contains "$T/err" "^atftrace record: process [0-9]+ runs $T/plibc/libc.so.6: 1 function attached$" "attached once loaded"
"$TOOLS/record_stats" "$T/copy" >"$T/stats"
assert_eq $N "$(awk -v f="$IMPL" '$1 == "call" && $3 == f { print $4 }' "$T/stats")" "calls of strlen in the private libc"
grep -q "is an ifunc" "$T/err" && fail "the private libc's strlen was left unresolved: $(cat "$T/err")"

# -p: the GOT slot of the running process; then _int_malloc next to bpftrace. bpftrace attaches
# first and proves it: its probe on call_malloc prints once "m 0" (no malloc) reaches it, and it
# reads its output only once every probe is attached; then atftrace attaches.
mkfifo "$T/cmd" "$T/out" "$T/ready"
"$TARGETS/calls_libc" loop "$T/cmd" >"$T/out" &
target=$!
exec 4<"$T/out"
read -r -t 120 -u 4 word pid || fail "no pid from calls_libc"
exec 3<>"$T/cmd"
timeout 120 bpftrace -B line -e "uprobe:$LIBC:_int_malloc /pid == $target/ { @n = count(); }
uprobe:$TARGETS/calls_libc:call_malloc /pid == $target/ { printf(\"seen\\n\"); }" >"$T/bt" 2>"$T/bterr" &
bt=$!
for i in $(seq 600); do
	echo "m 0" >&3; read -r -t 120 -u 4 line
	grep -q '^seen' "$T/bt" && break
	kill -0 $bt 2>/dev/null || break
	sleep 0.1
done
grep -q '^seen' "$T/bt" || { cat "$T/bterr" >&2; fail "bpftrace did not attach"; }
"$ATF" record -p "$target" -o "$T/p" -f 'libc.so.6:strlen' -f 'libc.so.6:_int_malloc' \
	--ready-file "$T/ready" 2>"$T/perr" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/perr" >&2; fail "the recorder never became ready"; }
echo "s $N" >&3; read -r -t 120 -u 4 line; assert_eq "done s $N" "$line" "ack strlen"
echo "m 5000" >&3; read -r -t 120 -u 4 line; assert_eq "done m 5000" "$line" "ack malloc"
kill -INT $bt; wait $bt || true
echo q >&3; exec 3>&-
wait $target || fail "calls_libc failed"
wait $rec || { cat "$T/perr" >&2; fail "record -p failed"; }
"$ATF" verify "$T/p" >/dev/null || fail "verify -p"
"$TOOLS/record_stats" "$T/p" >"$T/stats"
assert_eq $N "$(awk -v f="$IMPL" '$1 == "call" && $3 == f { print $4 }' "$T/stats")" "-p: calls of strlen ($IMPL)"
BT=$(awk '/^@n:/ { print $2 }' "$T/bt")
[ -n "$BT" ] && [ "$BT" -gt 0 ] || { cat "$T/bt" >&2; fail "bpftrace counted no _int_malloc"; }
assert_eq "$BT" "$(awk '$1 == "call" && $3 == "_int_malloc" { print $4 }' "$T/stats")" "_int_malloc calls (bpftrace: $BT)"
echo "ok: strlen -> $IMPL $N calls (launched, -p), _int_malloc $BT calls as bpftrace"
