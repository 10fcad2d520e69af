#!/usr/bin/env bash
# record --auto-args / -A / -R -- typed_args: the dump prints each call uftrace style with its
# typed arguments and return value, exactly: ints of each size and sign, a string (escaped; cut
# at --string-bytes with "..."), an enum by its value name, a pointer, a char, a struct by
# value by its type name, arg7 from the stack, a string return value; a NULL and an unreadable
# char * show as markers and the target is unharmed; floats (xmm) show as "?". -A/-R give the
# same on the binary built without DWARF. The files stay ATF v2: verify, and atf_raw (a reader
# sharing no code with libatf) accepts the string block after the stack.
source "$(dirname "$0")/lib.sh"
need_bpf
[ "$(uname -m)" = x86_64 ] || skip "the argument registers checked here are x86_64's"

record() {   # name, target, record options...
	local name=$1 target=$2; shift 2
	"$ATF" record -o "$T/$name" "$@" -- "$TARGETS/$target" >"$T/$name.out" 2>"$T/$name.err" \
		|| { cat "$T/$name.err" >&2; fail "record $name failed"; }
	"$ATF" verify "$T/$name" >"$T/$name.verify" || { cat "$T/$name.verify" >&2; fail "verify $name"; }
	"$TOOLS/atf_raw" "$T/$name"/pid_*/thread_0 >"$T/$name.raw" || { tail -1 "$T/$name.raw" >&2; fail "atf_raw $name"; }
	# main's argv: an address that changes from run to run
	"$ATF" dump "$T/$name" | sed 's/^.*| //; s/^main(1, 0x[0-9a-f]*)/main(1, ARGV)/' >"$T/$name.dump"
}

record auto typed_args --auto-args
ptr=$(awk '$1 == "ptr" { print $2 }' "$T/auto.out")
[ -n "$ptr" ] || fail "the target did not print its pointer"
z64=$(printf 'z%.0s' $(seq 64))
cat >"$T/auto.want" <<W
# thread_0 tid=$(awk '/^# thread_0/ { sub("tid=", "", $3); print $3 }' "$T/auto.dump") name=typed_args events=22
main(1, ARGV) {
  typed(42, "INSERT INTO t VALUES(?)", GREEN, $ptr, ?, -1, 'q') = 84;
  typed(7, "tab\\there \\"quoted\\"", BLUE, 0x0, ?, -123456789012, '\\n') = 14;
  color_name(GREEN) = "green";
  half(?) = ?;
  take_pt(struct pt, 3) = 6;
  make_big(3, "big") = struct big;
  maybe((null)) = 1;
  maybe(<bad string 0x8>) = 0;
  count8(1, 2, 3, 4, 5, 6, "seventh", -8) = 20;
  count8(1, 2, 3, 4, 5, 6, "$z64"..., 8) = 129;
} = 0; /* main */
W
diff -u "$T/auto.want" "$T/auto.dump" || fail "--auto-args dump"
assert_eq 600 "$(stat -c %a "$T/auto/args.txt")" "args.txt has the session files' mode"
assert_eq 1 "$(grep -c "float arguments and return values show as '?'" "$T/auto.err")" "the float note, once"
assert_eq 7 "$(grep -c '^reg .* C .* strings 1$' "$T/auto.raw")" "CALLs with a string block (atf_raw): typed, maybe, count8 twice each, make_big"
assert_eq 1 "$(grep -c '^reg .* R .* strings 1$' "$T/auto.raw")" "RETURNs with a string block (color_name)"

# the other attach styles (uprobe_multi links, perf-event uprobes) run the same BPF code
for kind in multi perf; do
	ATFTRACE_LINK=$kind "$ATF" record -o "$T/link_$kind" -f typed -A 'typed@arg1/i32,arg2/s' \
		-- "$TARGETS/typed_args" >/dev/null 2>"$T/link.err" || { cat "$T/link.err" >&2; fail "record ($kind)"; }
	assert_eq 'typed(42, "INSERT INTO t VALUES(?)");|typed(7, "tab\there \"quoted\"");|' \
		"$("$ATF" dump "$T/link_$kind" | sed -n 's/^.*| //p' | tr '\n' '|')" "typed values with ATFTRACE_LINK=$kind"
done

# exports: Chrome's detail instants carry args.arguments / args.retval (valid JSON); Perfetto
# has string debug annotations "args" / "retval" that protoc decodes with the schema
"$ATF" export -F chrome -o "$T/auto.json" "$T/auto" || fail "chrome export"
assert_eq "42, \"INSERT INTO t VALUES(?)\", GREEN, $ptr, ?, -1, 'q'|84|\"green\"" \
	"$(jq -r '[.traceEvents[] | select(.name == "detail") | .args] as $d
		  | [($d[] | select(.function == "typed") | .arguments // empty)][0] + "|"
		  + [($d[] | select(.function == "typed") | .retval // empty)][0] + "|"
		  + [($d[] | select(.function == "color_name") | .retval // empty)][0]' "$T/auto.json")" "chrome args.arguments and args.retval"
if command -v protoc >/dev/null; then
	"$ATF" export -F perfetto -o "$T/auto.pftrace" "$T/auto" || fail "perfetto export"
	protoc -I "$ROOT/tests/data" --decode=perfetto.protos.Trace "$ROOT/tests/data/perfetto_trace.proto" \
		<"$T/auto.pftrace" >"$T/auto.pf.txt" || fail "protoc could not decode the perfetto export"
	! grep -qE '^ *[0-9]+:' "$T/auto.pf.txt" || fail "perfetto fields outside the schema"
	assert_eq 11 "$(grep -c 'name: "args"' "$T/auto.pf.txt")" "perfetto args annotations (one per call)"
	assert_eq 11 "$(grep -c 'name: "retval"' "$T/auto.pf.txt")" "perfetto retval annotations"
	grep -qF 'string_value: "\"green\""' "$T/auto.pf.txt" || fail "perfetto: color_name's retval"
fi

# -A/-R on the binary without DWARF, --string-bytes cuts strings; main has no spec: plain lines
record spec typed_args_nodw -A 'typed@arg1/d32,arg2/s,arg3/d,arg4/x,arg6/c' -R 'typed@retval/d32' \
	-A 'count8@arg7/s' -R 'color_name@retval/s' -A 'maybe@arg1/s' --string-bytes 8
cat >"$T/spec.want" <<W
main() {
  typed(42, "INSERT I"..., 5, $ptr, 'q') = 84;
  typed(7, "tab\\there"..., 6, 0, '\\n') = 14;
  color_name() = "green";
  half();
  take_pt();
  make_big();
  maybe((null));
  maybe(<bad string 0x8>);
  count8("seventh");
  count8("zzzzzzzz"...);
} /* main */
W
ptr=$(awk '$1 == "ptr" { print $2 }' "$T/spec.out")
sed -i "s/typed(42, \"INSERT I\"..., 5, [^,]*,/typed(42, \"INSERT I\"..., 5, $ptr,/" "$T/spec.want"
grep -v '^#' "$T/spec.dump" | diff -u "$T/spec.want" - || fail "-A/-R dump"
[ -z "$(grep -v '^#' "$T/spec.dump" | grep 'args:\|ret:')" ] || fail "raw register lines next to typed ones"

# -A FUNC / -R FUNC without a spec: DWARF's types for those functions only; with a stack
# snapshot (the others have none: typed arguments alone need no stack)
record named typed_args -A typed -R color_name -A 'maybe@arg1/x' --stack-bytes 16
ptr=$(awk '$1 == "ptr" { print $2 }' "$T/named.out")
cat >"$T/named.want" <<W
main() {
  typed(42, "INSERT INTO t VALUES(?)", GREEN, $ptr, ?, -1, 'q');
  typed(7, "tab\\there \\"quoted\\"", BLUE, 0x0, ?, -123456789012, '\\n');
  color_name() = "green";
  half();
  take_pt();
  make_big();
  maybe(0);
  maybe(0x8);
  count8();
  count8();
} /* main */
W
grep -v '^#' "$T/named.dump" | diff -u "$T/named.want" - || fail "-A FUNC / -R FUNC from DWARF"
assert_eq 2 "$(grep -c '^reg .* C .* stack 16 strings 1$' "$T/named.raw")" "typed's CALLs: 16 stack bytes, then the strings"
assert_eq "11 11" "$(grep -c '^reg .* C ' "$T/auto.raw") $(grep -c '^reg .* C .* stack 0\( \|$\)' "$T/auto.raw")" \
	"--auto-args alone: every call has detail, with no stack bytes"

# a library dlopen'ed while recording gets its specs when its probes attach (its DWARF too)
mkfifo "$T/cmd" "$T/out"
"$ATF" record -o "$T/live" -f 'libatfplugin.so:plugin_*' -A plugin_work -A 'plugin_leaf@arg1/i32' \
	-- "$TARGETS/dlopen_user" "$T/cmd" "$TARGETS/libatfplugin.so" >"$T/out" 2>"$T/live.err" &
rec=$!
cleanup() {   # the recorder, and a typed_args still held on its fifo (which then ends)
	kill $rec 2>/dev/null || true
	wait $rec 2>/dev/null || true
	[ ! -p "$T/hold" ] || timeout 5 sh -c ': >"$1"' sh "$T/hold" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
exec 4<"$T/out"
read -r -t 60 -u 4 word pid || fail "live: no pid from dlopen_user"
exec 3>"$T/cmd"
echo "l 2" >&3
read -r -t 60 -u 4 line || true
assert_eq "loaded 2" "$line" "live: the plugin loaded and called"
echo q >&3
exec 3>&- 4<&-
wait $rec || { cat "$T/live.err" >&2; fail "record (live) failed"; }
"$ATF" dump "$T/live" | sed 's/^.*| //' | grep -v '^#' >"$T/live.dump"
cat >"$T/live.want" <<W
plugin_work(0) {
  plugin_leaf(0);
  plugin_leaf(0);
} /* plugin_work */
plugin_work(1) {
  plugin_leaf(1);
  plugin_leaf(-1);
} /* plugin_work */
W
diff -u "$T/live.want" "$T/live.dump" || fail "typed arguments of a dlopen'ed library"

# a string constant on a page the process never touched: the probe cannot read it, the
# recorder reads it from the live process (a read-only mapping); the session ends (SIGINT)
# while the target still runs, held on a fifo
mkfifo "$T/hold" "$T/cold.out"
"$ATF" record -o "$T/cold" -f cold_len --auto-args -- "$TARGETS/typed_args" "$T/hold" \
	>"$T/cold.out" 2>"$T/cold.err" &
rec=$!
exec 5<"$T/cold.out"
read -r -t 60 -u 5 line || true
assert_eq cold "$line" "the target called cold_len"
kill -INT $rec
wait $rec || { cat "$T/cold.err" >&2; fail "record (cold) failed"; }
: >"$T/hold"                     # the target may end now (it only waits for the open)
exec 5<&-
assert_eq 'cold_len("cold constant") = 13;' "$("$ATF" dump "$T/cold" | sed -n 's/^.*| //p')" \
	"a constant on an untouched page, read from the process"
"$TOOLS/atf_raw" "$T/cold"/pid_*/thread_0 >/dev/null || fail "atf_raw cold"

# one clear line for each bad spelling, and no session
for bad in "-A typed" "-R typed" "-A typed@arg9" "-A typed@arg1/S" "-A typed@arg1%rdi" "-A typed@arg1/z" "-R typed@retval/d12" "-A typed@arg1," \
	   "-A nosuch_function@arg1" "--string-bytes 0" "--string-bytes 256"; do
	if "$ATF" record -o "$T/bad" $bad -- "$TARGETS/typed_args_nodw" >/dev/null 2>"$T/bad.err"; then
		fail "record $bad succeeded"
	fi
	assert_contains "$T/bad.err" '^atftrace record: ' "error line for $bad"
	[ ! -e "$T/bad" ] || fail "record $bad left a session"
done
echo "ok: typed arguments and return values exact with --auto-args and -A/-R"
