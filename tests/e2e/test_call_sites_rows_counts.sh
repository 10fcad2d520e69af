#!/usr/bin/env bash
# record --call-sites against the other tools that count a redirected function's calls
# (docs/design-call-sites.md, "Row by row"): four threads call tr_sub hot (tr_sub(2000000+t));
# at each round every thread calls tr_mark, then K times tr_sub(i) directly (a redirected site)
# and K times through a pointer (never redirected), then tr_done. A tool's counts are
# filtered on x < 1000000 (%di), so they are those of the round alone, and exact:
#   - at tr_sub's entry, at tr_sub+4 (inside the relocated first instructions, inside an entry
#     trampoline's jmp) and at tr_sub+8 (past them): all 2K calls of each thread. A redirected
#     call runs the relocated instructions in its stub and enters past them, so the first
#     tool's registration makes the recorder hand tr_sub back (its sites get the file's calls
#     again); each round waits for that line. On entry trampolines the registration guard does
#     the same.
# Rows:
#   1  bpftrace on tr_sub's entry and +8, a new session for each of 50 rounds: the target never
#      dies; each session's counts exact;
#   2  perf probe tr_sub+4 and tr_sub+8, perf record -p, 5 rounds: the target never dies;
#      perf's counts exact;
#   12 tracefs uprobe_events on tr_sub's entry and +8, enabled in an instance, 5 rounds: no
#      SIGSEGV; the trace's counts exact.
# And atftrace's own recording meanwhile: every thread's every round exactly 2K tr_sub calls.
# ROWS=..., ROWS_MODE=... (tests/e2e/lib_rows.sh) run a part, or on entry trampolines.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
source "$(dirname "$0")/lib_rows.sh"
NT=4 K=300 TRIES1=${ROWS_TRIES:-50} TRIES2=5 TRIES12=5
TRACEFS=/sys/kernel/tracing
EV=rows$$
ENTRY=$SUB_OFF BODY=$(printf '0x%x' $((SUB_OFF + 8))) INSIDE=$(printf '0x%x' $((SUB_OFF + 4)))
# From another tool's registration on, every call enters at tr_sub's first bytes
AT_ENTRY=$((2 * NT * K)) AT_INSIDE=$((2 * NT * K))
# handed_back WHAT: with --call-sites, the recorder has given tr_sub's calls back (once)
handed_back() {
	[ "$MODE" = --call-sites ] || return 0
	wait_for "$T/r.err" "^atftrace record: tr_sub \\(.*\\) handed back: another tool registered a uprobe on it" "$1: tr_sub handed back"
}

# tracefs and perf probe leftovers go too, on failure as well
cleanup_events() {
	[ -d "$TRACEFS/instances/$EV" ] && { echo 0 >"$TRACEFS/instances/$EV/events/$EV/enable" || true
		rmdir "$TRACEFS/instances/$EV" || true; }
	grep -q "^p:$EV/entry " "$TRACEFS/uprobe_events" 2>/dev/null && { echo "-:$EV/entry" >>"$TRACEFS/uprobe_events" || true; }
	grep -q "^p:$EV/body " "$TRACEFS/uprobe_events" 2>/dev/null && { echo "-:$EV/body" >>"$TRACEFS/uprobe_events" || true; }
	perf probe -q -d "$EV:*" 2>/dev/null || true
}
trap 'cleanup_events; '"$(trap -p EXIT | sed "s/^trap -- '//; s/' EXIT$//")" EXIT

mkfifo "$T/cmd"
exec 5<>"$T/cmd"
"$CR" rounds $NT "$T/hot" <"$T/cmd" >"$T/rounds.out" &
target=$!
wait_file "$T/hot" "the threads run"
rows_record r $target
rec=$REC
ROUND=0

# one_round WHAT: every thread's round of K pairs, finished (bounded)
one_round() {
	ROUND=$((ROUND + 1))
	echo $K >&5
	timeout 120 bash -c 'until [ "$(grep -c "^round" "$1")" -ge $2 ]; do sleep 0.02; done' _ "$T/rounds.out" $ROUND \
		|| { alive $target "$1"; fail "$1: round $ROUND did not end in 120 s"; }
	assert_eq "round $K: direct $((NT * K)) indirect $((NT * K))" "$(sed -n "${ROUND}p" "$T/rounds.out")" \
		"$1: the target's own count"
}

# ---- row 1: bpftrace, a new session each round ------------------------------------------------
if row_on 1; then
	for i in $(seq $TRIES1); do
		bt_start bt$i "uprobe:$CR:tr_sub /reg(\"di\") < 1000000/ { @entry = count(); }
			uprobe:$CR:rows_body /reg(\"di\") < 1000000/ { @body = count(); }"
		alive $target "row 1, bpftrace session $i attached"
		handed_back "row 1, bpftrace session $i"
		one_round "row 1, bpftrace session $i"
		stop_bpftrace $BT
		alive $target "row 1, bpftrace session $i"
		assert_eq "$AT_ENTRY $((2 * NT * K))" "$(bt_map bt$i entry) $(bt_map bt$i body)" \
			"row 1, bpftrace session $i: its counts at tr_sub's entry and at tr_sub+8"
	done
	echo "row 1: $TRIES1 bpftrace sessions, counts exact"
fi

# ---- row 2: perf probe inside the relocated bytes and past them, perf record -p ---------------
if row_on 2; then
	command -v perf >/dev/null || fail "perf is missing (scripts/deps.sh installs linux-perf)"
	perf probe -q -x "$CR" -a "$EV:inside=tr_sub+4 x=%di:s32" -a "$EV:body=tr_sub+8 x=%di:s32" \
		>"$T/probe.out" 2>&1 || { cat "$T/probe.out" >&2; fail "perf probe"; }
	for i in $(seq $TRIES2); do
		perf record -q -m 1024 -e "$EV:inside" --filter 'x < 1000000' -e "$EV:body" --filter 'x < 1000000' \
			-p $target -o "$T/perf$i.data" >"$T/perf$i.out" 2>&1 &
		perf=$!
		wait_int3 $target $INSIDE "row 2, perf record $i"
		wait_int3 $target $BODY "row 2, perf record $i"
		handed_back "row 2, perf record $i"
		one_round "row 2, perf record $i"
		kill -INT $perf
		wait $perf && rc=0 || rc=$?    # 130: perf record ends by its SIGINT
		[ $rc = 0 ] || [ $rc = 130 ] || { cat "$T/perf$i.out" >&2; fail "row 2: perf record $i: exit $rc"; }
		alive $target "row 2, perf record $i"
		perf script -i "$T/perf$i.data" -F event 2>/dev/null | sort | uniq -c >"$T/perf$i.counts"
		assert_eq "$AT_INSIDE $((2 * NT * K))" \
			"$(awk -v e="$EV:inside:" '$2 == e { n = $1 } END { print n + 0 }' "$T/perf$i.counts") $(awk -v e="$EV:body:" '$2 == e { n = $1 } END { print n + 0 }' "$T/perf$i.counts")" \
			"row 2, perf record $i: its counts at tr_sub+4 and tr_sub+8"
	done
	perf probe -q -d "$EV:*" >/dev/null 2>&1 || fail "perf probe -d"
	echo "row 2: $TRIES2 perf record sessions, counts exact"
fi

# ---- row 12: tracefs uprobe events, enabled in an instance -------------------------------------
if row_on 12; then
	echo "p:$EV/entry $CR:$ENTRY x=%di:s32" >>$TRACEFS/uprobe_events || fail "cannot define a tracefs uprobe event"
	echo "p:$EV/body $CR:$BODY x=%di:s32" >>$TRACEFS/uprobe_events || fail "cannot define a tracefs uprobe event"
	mkdir "$TRACEFS/instances/$EV"
	I=$TRACEFS/instances/$EV
	echo 4096 >"$I/buffer_size_kb"
	echo 'x < 1000000' >"$I/events/$EV/entry/filter"
	echo 'x < 1000000' >"$I/events/$EV/body/filter"
	for i in $(seq $TRIES12); do
		echo >"$I/trace"
		echo 1 >"$I/events/$EV/enable"
		wait_int3 $target $ENTRY "row 12, enable $i"
		handed_back "row 12, enable $i"
		one_round "row 12, enable $i"
		echo 0 >"$I/events/$EV/enable"
		alive $target "row 12, enable $i"
		assert_eq "$AT_ENTRY $((2 * NT * K))" \
			"$(grep -c " entry: " "$I/trace" || true) $(grep -c " body: " "$I/trace" || true)" \
			"row 12, enable $i: the trace's counts at tr_sub's entry and at tr_sub+8"
		grep -q "LOST" "$I/trace" && fail "row 12: the trace lost events"
	done
	rmdir "$I"
	echo "-:$EV/entry" >>$TRACEFS/uprobe_events
	echo "-:$EV/body" >>$TRACEFS/uprobe_events
	echo "row 12: $TRIES12 tracefs enables, counts exact"
fi

# ---- atftrace's recording of all the rounds ----------------------------------------------------
echo 0 >&5                      # the target ends (the recorder holds fd 5 too: no end of file)
wait $target || fail "the target failed: $(cat "$T/rounds.out")"
wait $rec || { cat "$T/r.err" >&2; fail "record -p failed"; }
"$ATF" verify "$T/r" >/dev/null || fail "verify"
mark_window_counts "$T/r" >"$T/r.win"
assert_eq $NT "$(wc -l <"$T/r.win")" "threads that reached a mark"
assert_eq $NT "$(awk -v r=$ROUND -v k=$K '$2 == r && $3 == 2 * k * r' "$T/r.win" | wc -l)" \
	"threads with exactly $ROUND rounds of $((2 * K)) tr_sub calls in atftrace's recording"
echo "ok: $ROUND rounds exact for the other tools and for atftrace"
