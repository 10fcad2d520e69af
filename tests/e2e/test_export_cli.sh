#!/usr/bin/env bash
# atftrace export's command line: --list, the cross-option rules (each an error line and exit 2),
# SESSION as a session dir or a pid dir (--pid when there are several), --thread by directory
# id or OS tid, --from/--to as offsets from the session start in ns/us/ms/s, and failures that
# leave no partial output.
source "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || fail "needs jq (scripts/deps.sh installs it)"
[ -x "$TOOLS/gen_session" ] || fail "missing $TOOLS/gen_session (make OUTPUT=$OUTPUT tools)"

mkdir -p "$T/one" "$T/two"
"$TOOLS/gen_session" -o "$T/one/pid_4242" --threads 2 --calls 20 --seed 3 >/dev/null
"$TOOLS/gen_session" -o "$T/two/pid_4242" --threads 1 --calls 5 --seed 4 >/dev/null
"$TOOLS/gen_session" -o "$T/two/pid_77" --threads 1 --calls 9 --seed 5 >/dev/null
jq '.pid = 77 | .ns_pid = 77' "$T/two/pid_77/manifest.json" >"$T/m77" && mv "$T/m77" "$T/two/pid_77/manifest.json"
M=$T/one/pid_4242/manifest.json

# usage ERRLINE args...: exit status 2 and that first stderr line, no output file.
usage() {
	local want=$1 rc=0; shift
	"$ATF" export "$@" 2>"$T/err" >/dev/null || rc=$?
	assert_eq 2 "$rc" "exit status of export $*"
	assert_eq "$want" "$(head -n 1 "$T/err")" "error line of export $*"
	[ ! -e "$T/x.out" ] || fail "export $* left $T/x.out"
}
# failure ERRLINE args...: exit status 1 and that first stderr line.
failure() {
	local want=$1 rc=0; shift
	"$ATF" export "$@" 2>"$T/err" >/dev/null || rc=$?
	assert_eq 1 "$rc" "exit status of export $*"
	assert_eq "$want" "$(head -n 1 "$T/err")" "error line of export $*"
}
# events FILE: B and E events in a Chrome export.
events() { jq '[.traceEvents[] | select(.ph == "B" or .ph == "E")] | length' "$1"; }
# calls FILE FROM TO: B events with FROM <= ts <= TO (ns) in a Chrome export.
calls() { jq --argjson f "$2" --argjson t "$3" \
	'[.traceEvents[] | select(.ph == "B") | (.ts * 1000 | round) | select(. >= $f and . <= $t)] | length' "$1"; }
# balanced FILE: per thread, every E closes the innermost open B of the same name, none left open.
balanced() {
	jq -r '.traceEvents[] | select(.ph == "B" or .ph == "E") | "\(.pid)/\(.tid) \(.ph) \(.name)"' "$1" |
	awk '{ k = $1; n = $3; for (i = 4; i <= NF; i++) n = n " " $i
	       if ($2 == "B") { s[k, ++d[k]] = n; next }
	       if (d[k] < 1 || s[k, d[k]] != n) { print "unbalanced E " n " on " k; bad = 1; exit 1 }
	       d[k]-- }
	     END { if (bad) exit 1; for (k in d) if (d[k]) { print d[k] " open on " k; exit 1 } }' >&2 ||
		fail "$1 is not balanced"
}

"$ATF" export --list >"$T/list"
for f in dial9 perfetto chrome; do
	assert_contains "$T/list" "^  $f +[^ ]" "--list entry for $f"
done

S=$T/one
usage "atftrace export: -F FORMAT: missing (see --list)" "$S" -o "$T/x.out"
usage "atftrace export: -o OUT: missing" "$S" -F chrome
usage "atftrace export: SESSION: missing (a session directory or a pid_* directory)" -F chrome -o "$T/x.out"
usage "atftrace export: -F nope: unknown format (see --list)" "$S" -F nope -o "$T/x.out"
usage "atftrace export: --chunk-size: only applies to -F wtf or -F wtf-json, not -F perfetto" \
	"$S" -F perfetto -o "$T/x.out" --chunk-size 64K
usage "atftrace export: --compress: only applies to -F zts, not -F chrome" "$S" -F chrome -o "$T/x.out" --compress lz4
usage "atftrace export: --json-mode: only applies to -F wtf-json, not -F dial9" \
	"$S" -F dial9 -o "$T/x.out" --json-mode partial
usage "atftrace export: --unit-size: only applies to -F rtc, not -F chrome" "$S" -F chrome -o "$T/x.out" --unit-size 8192
usage "atftrace export: --from 3parsecs: expected a time such as 1500, 20us (or 20µs), 1.5ms, 2s, 1m or 1m30s" \
	"$S" -F chrome -o "$T/x.out" --from 3parsecs
usage "atftrace export: --to 1000000000000000000s: too large (at most 18446744073709551615 ns, about 584 years)" \
	"$S" -F chrome -o "$T/x.out" --to 1000000000000000000s
usage "atftrace export: --weight heavy: expected self, total or calls" "$S" -F folded -o "$T/x.out" --weight heavy
usage "atftrace export: --weight: only applies to -F folded, not -F chrome" "$S" -F chrome -o "$T/x.out" --weight calls
usage "atftrace export: --to: earlier than --from" "$S" -F chrome -o "$T/x.out" --from 2ms --to 1ms
usage "atftrace export: --unit-size 3000: must be a power of two" "$S" -F rtc -o "$T/x.out" --unit-size 3000
usage "atftrace export: --minor-unit-size 1K: must be a power of two above 1034" \
	"$S" -F rtc -o "$T/x.out" --minor-unit-size 1K
usage "atftrace export: --minor-unit-size: larger than --unit-size" \
	"$S" -F rtc -o "$T/x.out" --unit-size 8K --minor-unit-size 16K
usage "atftrace export: --compress gzip: expected lz4, zlib or none" "$S" -F zts -o "$T/x.out" --compress gzip

rc=0
"$ATF" export "$T/missing" -F chrome -o "$T/x.out" 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "exit status for a missing session"
# (atf_session_resolve prints a line of its own first; ours must be there too)
assert_contains "$T/err" "^atftrace export: $T/missing: No such file or directory$" "error line for a missing session"
failure "atftrace export: $T/two: holds 2 processes, and -F dial9 holds one process; choose one with --pid: 77 4242" \
	"$T/two" -F dial9 -o "$T/x.out"
failure "atftrace export: --pid 5: no pid_5 directory in $T/two" "$T/two" -F chrome -o "$T/x.out" --pid 5
failure "atftrace export: --thread 9: no such thread in $S/pid_4242" "$S" -F chrome -o "$T/x.out" --thread 9
rc=0
"$ATF" export "$S" -F chrome -o "$T/nodir/x.json" 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "exit status when the output cannot be created"
assert_contains "$T/err" "^atftrace export: $T/nodir/x.json: " "error line for the output"

# an output that is, or lies inside, the session being read is refused, however it is spelt
cp -r "$S" "$T/one.orig"
ln -s "$S/pid_4242" "$T/into"
for out in "$S/pid_4242/thread_0/index.atf" "$S/pid_4242/manifest.json" "$S" "$S/x.json" \
	   "$S/pid_4242/../new/x.json" "$T/into/x.json"; do
	for fmt in chrome zts; do
		failure "atftrace export: -o $out: lies inside the session being read ($S); write it elsewhere" \
			"$S" -F $fmt -o "$out"
	done
done
for out in "$S/pid_4242/thread_0/index.atf" "$S/pid_4242/manifest.json" "$T/into/x.json" "$S/pid_4242/thread_1"; do
	failure "atftrace export: -o $out: lies inside the session being read ($S/pid_4242); write it elsewhere" \
		"$S/pid_4242" -F zts -o "$out"
done
diff -r "$T/one.orig" "$S" >/dev/null || fail "a refused export changed the session"
rm -rf "$T/one.orig"

# SESSION forms: session dir, pid dir, --pid among several.
"$ATF" export "$S" -F chrome -o "$T/a.json"
"$ATF" export "$S/pid_4242" -F chrome -o "$T/b.json"
cmp -s "$T/a.json" "$T/b.json" || fail "session dir and pid dir exports differ"
total=$(jq '[.threads[].index_events] | add' "$M")
assert_eq "$total" "$(events "$T/a.json")" "events in a full export"
"$ATF" export "$T/two" --pid 77 -F chrome -o "$T/p77.json"
assert_eq "$(jq '[.threads[].index_events] | add' "$T/two/pid_77/manifest.json")" "$(events "$T/p77.json")" \
	"events of --pid 77"

# a session of several processes is one trace in the formats that hold processes
"$ATF" export "$T/two" -F chrome -o "$T/both.json"
assert_eq "[77,4242]" "$(jq -c '[.traceEvents[] | select(.ph == "B") | .pid] | unique' "$T/both.json")" "pids in one trace"
assert_eq "$(jq -s '[.[].threads[].index_events] | add' "$T/two/pid_77/manifest.json" "$T/two/pid_4242/manifest.json")" \
	"$(events "$T/both.json")" "events of both processes"
assert_eq '["gen_target","gen_target"]' "$(jq -c '[.traceEvents[] | select(.ph == "M" and .name == "process_name") | .args.name]' "$T/both.json")" \
	"a process_name per process"
balanced "$T/both.json"
for f in speedscope folded perfetto; do
	"$ATF" export "$T/two" -F $f -o "$T/both.$f" || fail "-F $f of two processes"
done
assert_eq 2 "$(jq '.profiles | length' "$T/both.speedscope")" "speedscope profiles of two processes"
assert_eq 2 "$(cut -d';' -f1 "$T/both.folded" | sort -u | wc -l)" "folded roots of two processes (one per process)"

# --thread: directory id or OS tid select the same thread.
tid1=$(jq '.threads[1].tid' "$M")
"$ATF" export "$S" -F chrome -o "$T/t1.json" --thread 1
"$ATF" export "$S" -F chrome -o "$T/tid.json" --thread "$tid1"
cmp -s "$T/t1.json" "$T/tid.json" || fail "--thread 1 and --thread $tid1 differ"
assert_eq "$(jq '.threads[1].index_events' "$M")" "$(events "$T/t1.json")" "events of thread 1"
assert_eq "[$tid1]" "$(jq -c '[.traceEvents[] | select(.ph != "M") | .tid] | unique' "$T/t1.json")" "tids of thread 1"

# --from/--to: offsets from time_start_ns, inclusive, in any unit; every ranged export is
# balanced: all calls in the range are there, each closed (made up at the range's end when
# its return is later), and no return whose call is before the range.
start=$(jq '.time_start_ns' "$M")
balanced "$T/a.json"
jq '.traceEvents[] | select(.ph == "B" or .ph == "E") | .ts * 1000 | round' "$T/a.json" >"$T/ts"   # ns
mid=$(sed -n "$((total / 2))p" "$T/ts")
rel=$((mid - start))
"$ATF" export "$S" -F chrome -o "$T/r1.json" --from "${rel}ns" --to "$rel"
assert_eq $((2 * $(calls "$T/a.json" "$mid" "$mid"))) "$(events "$T/r1.json")" "events at exactly one timestamp"
balanced "$T/r1.json"
"$ATF" export "$S" -F chrome -o "$T/r2.json" --from "$((rel / 1000)).$(printf %03d $((rel % 1000)))us"
"$ATF" export "$S" -F chrome -o "$T/r3.json" --from "$rel"
cmp -s "$T/r2.json" "$T/r3.json" || fail "--from in us with decimals differs from ns"
assert_eq $((2 * $(calls "$T/a.json" "$mid" 99999999999999999))) "$(events "$T/r3.json")" "events from the middle on"
balanced "$T/r3.json"
q1=$(sed -n "$((total / 4))p" "$T/ts")
"$ATF" export "$S" -F chrome -o "$T/r5.json" --from "$((q1 - start))" --to "$((mid - start))ns"
assert_eq $((2 * $(calls "$T/a.json" "$q1" "$mid"))) "$(events "$T/r5.json")" "events of a range inside calls"
balanced "$T/r5.json"
"$ATF" export "$S" -F speedscope -o "$T/r5.speedscope" --from "$((q1 - start))" --to "$((mid - start))ns"
jq -r '.profiles[] | .events | map(.type) | join("")' "$T/r5.speedscope" | while read -r seq; do
	awk -v s="$seq" 'BEGIN { for (i = 1; i <= length(s); i++) { d += substr(s, i, 1) == "O" ? 1 : -1; if (d < 0) exit 1 }
		exit d != 0 }' || fail "speedscope profile of a range is not balanced: $seq"
done
"$ATF" export "$S" -F chrome -o "$T/r4.json" --to 0s
assert_eq 0 "$(events "$T/r4.json")" "events up to the session start"

# a failed export leaves an existing output file as it was, and no temporary beside it;
# a successful one with --force replaces it; standard output (-) and a pipe are written directly
# (test_export_output.sh: what an existing output path gets without --force, links, modes)
echo precious >"$T/keep.rtc"
if "$ATF" export "$T/one" -F rtc --unit-size 4096 --minor-unit-size 2048 -o "$T/keep.rtc" --force 2>/dev/null; then
	fail "an RTC geometry too small for the session was accepted"
fi
assert_eq precious "$(cat "$T/keep.rtc")" "the existing file after a failed export"
assert_eq 1 "$(ls "$T" | grep -c '^keep\.rtc')" "files named keep.rtc* after a failed export"
"$ATF" export "$T/one" -F chrome -o "$T/keep.rtc" --force
jq -e '.traceEvents | length > 0' "$T/keep.rtc" >/dev/null || fail "a successful export did not replace the file"
assert_eq "$(cat "$T/keep.rtc")" "$("$ATF" export "$T/one" -F chrome -o -)" "chrome to standard output (a pipe)"
mkfifo "$T/pipe"
cat "$T/pipe" >"$T/from_pipe" &
"$ATF" export "$T/one" -F chrome -o "$T/pipe"
wait $!
cmp -s "$T/keep.rtc" "$T/from_pipe" || fail "chrome to a FIFO differs"
echo "ok"
