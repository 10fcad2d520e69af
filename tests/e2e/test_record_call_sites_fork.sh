#!/usr/bin/env bash
# record --call-sites --follow-fork -p with the recorder stopped (SIGSTOP) while the target forks:
# no hold at fork (the stubs' probes are emulated nops, so a child needs no fix-up), so the 5
# children (tests/targets/cs_rows forks: each calls tr_sub 2000 times directly, through its stub,
# and 2000 times through a pointer, its plain probe, and checks every result) run to their end
# while the recorder is still stopped; once it continues, each child's calls are all in its own
# pid_<PID>/: exactly 4000 calls and 4000 returns of tr_sub, nothing unwound, lost or left open.
# (test_call_sites_rows_procs.sh row 5 checks the children's results with the ring full, without
# following them.) FORK_MODE=--trampolines or --no-trampolines runs the same on the other ways in.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
MODE=${FORK_MODE:---call-sites}
CR=$T/cs_rows       # a private copy: only this test's processes run it
cp "$TARGETS/cs_rows" "$CR" || fail "build first: make OUTPUT=$OUTPUT targets"
KIDS=5

# one hot thread calls tr_sub in batches of 5 every millisecond; at SIGUSR1 the main thread forks
ROWS_HOT_US=1000 "$CR" forks $KIDS 1 "$T/run" >"$T/out" &
target=$!
timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.05; done' _ "$T/run" || fail "the target never became ready"
mkfifo "$T/ready"
"$ATF" record "$MODE" -v --follow-fork -p $target -o "$T/s" -f 'tr_*' --ring-size 16M \
	--ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p never became ready"; }
[ "$MODE" != --call-sites ] || assert_contains "$T/s.err" "cs_rows: [1-9][0-9]* call sites of 3 functions redirected" \
	"the calls of tr_sub, tr_mark and tr_done redirected"
kill -STOP $rec
kill -USR1 $target
# the forks end with the recorder stopped: nothing waits for it
if ! timeout 30 bash -c 'until grep -qE "^forks " "$1" 2>/dev/null; do sleep 0.05; done' _ "$T/out"; then
	kill -CONT $rec
	fail "the $KIDS forks did not end in 30 s while the recorder was stopped: $(cat "$T/out")"
fi
assert_eq T "$(awk '{ print $3 }' /proc/$rec/stat)" "the recorder's state while the children ran"
assert_eq "forks $KIDS ok $KIDS" "$(cat "$T/out")" "children that computed right"
kill -CONT $rec
kill -INT $rec          # its last drain takes what the children left in the ring
wait $rec || { cat "$T/s.err" >&2; fail "record -p failed"; }
kill -TERM $target
wait $target || fail "the target failed: $(cat "$T/out")"
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
# one line per child: "calls returns exceptions lost tr_sub-calls"
awk -v parent=$target '$1 == "process" && $2 != parent { p[$2] = $8 " " $10 " " $12 " " $16 }
	$1 == "call" && $2 != parent && $3 == "tr_sub" { c[$2] = $4 }
	$1 == "unbalanced" && $2 != parent && $3 { print "unbalanced", $2, $3 }
	END { for (k in p) print p[k], c[k] + 0 }' "$T/stats" >"$T/kids"
assert_eq $KIDS "$(grep -c . "$T/kids")" "children recorded, each in its own directory"
assert_eq "4000 4000 0 0 4000" "$(sort -u "$T/kids")" "each child: calls returns exceptions lost, and calls of tr_sub"
echo "ok: $KIDS forks with the recorder stopped ($MODE): no hold, 4000 exact calls in each child"
