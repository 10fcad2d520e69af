#!/usr/bin/env bash
# record --call-sites and who controls the target (docs/design-call-sites.md, "Row by row"): a
# serving target (two threads call tr_sub hot, the main thread calls it directly and through a
# pointer, and counts the SIGCONTs it receives); "runs on" below means it made 1000 more rounds
# of right results.
#   4  a uprobe on tr_sub's entry registered through the 32-bit `int 0x80` perf_event_open, and
#      a BPF_LINK_CREATE uprobe_multi whose attr lies in a page the registering process never
#      touched: the target runs on under each, the compat event counts at least the 1000
#      rounds' indirect calls;
#   8  the session ends while gdb holds the target: the calls stay redirected (nothing can be
#      written back), the target runs on once gdb detached, also under bpftrace on tr_sub;
#      `atftrace restore -p` then writes every call back; bpftrace again: it runs on;
#   9  the recorder, stopped, is killed with -9 while bpftrace registers uprobes on tr_sub: the
#      target is never seen stopped (its state polled every 2 ms), runs on, receives no SIGCONT;
#   10 the user stops the target (kill -STOP), then bpftrace on tr_sub, then the session ends:
#      the target stays stopped throughout; after the user's SIGCONT it runs on, and that was
#      the one SIGCONT it received;
#   11 perf stat -e 'sched:*' -a, 5 times, during the session: the target is never seen
#      stopped and receives no SIGCONT (a hold would be both); the longest pause between two of
#      its loop's iterations is printed next to one measured without perf.
# ROWS=..., ROWS_MODE=... (tests/e2e/lib_rows.sh) run a part, or on entry trampolines.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
source "$(dirname "$0")/lib_rows.sh"
REG=$TARGETS/reg_odd
[ -x "$REG" ] || fail "build first: make OUTPUT=$OUTPUT targets"
BT_ENTRY="uprobe:$CR:tr_sub { @entry = count(); }"

# serve NAME: a serving target ($T/NAME.run once it runs, its output in $T/NAME.out); sets TGT
serve() {
	"$CR" serve 2 "$T/$1.run" >"$T/$1.out" &
	TGT=$!
	wait_file "$T/$1.run" "$1: the target runs"
}

# serve_end NAME CONTS: end the serving target; it computed right and received CONTS SIGCONTs
serve_end() {
	kill -TERM $TGT
	wait $TGT || fail "$1: the target failed: $(cat "$T/$1.out")"
	assert_contains "$T/$1.out" "^served [1-9][0-9]* conts $2$" "$1: the target's rounds and SIGCONTs"
}

# ---- row 4: odd registrations --------------------------------------------------------------------
if row_on 4; then
	serve o
	rows_record o $TGT
	for how in compat multi; do
		mkfifo "$T/$how.in"
		if [ $how = compat ]; then
			"$REG" compat "$CR" $SUB_OFF $TGT <"$T/$how.in" >"$T/$how.out" 2>&1 &
		else
			mkdir "$T/$how.d"
			"$REG" multi "$CR" $SUB_OFF $TGT "$T/$how.d" <"$T/$how.in" >"$T/$how.out" 2>&1 &
		fi
		reg=$!
		exec 6>"$T/$how.in"
		wait_for "$T/$how.out" "^registered$" "row 4 ($how): the uprobe registered"
		[ "$(mem_byte $TGT $SUB_OFF)" = cc ] || fail "row 4 ($how): no int3 at tr_sub's entry"
		serve_more $TGT "$T/o.run" "row 4 ($how)"
		exec 6>&-
		wait $reg || fail "row 4 ($how): $(cat "$T/$how.out")"
		alive $TGT "row 4 ($how)"
		[ $how = multi ] || [ "$(sed -n 's/^count //p' "$T/$how.out")" -ge 1000 ] \
			|| fail "row 4 ($how): the compat event counted $(sed -n 's/^count //p' "$T/$how.out") calls, fewer than 1000"
	done
	kill -INT $REC
	wait $REC || { cat "$T/o.err" >&2; fail "row 4: record -p failed"; }
	serve_end o 0
	echo "row 4: uprobes through int 0x80 and from an untouched attr page, 0 deaths"
fi

# ---- row 8: the session ends while gdb holds the target ------------------------------------------
if row_on 8; then
	command -v gdb >/dev/null || fail "gdb is missing (scripts/deps.sh installs it)"
	serve g
	rows_record g $TGT
	mkfifo "$T/gdb.go"
	gdb -q -nx -batch -p $TGT -ex "shell cat $T/gdb.go >/dev/null" -ex detach >"$T/gdb.out" 2>&1 &
	gdb=$!
	wait_state $TGT t "row 8: gdb holds the target"
	kill -INT $REC
	wait $REC || { cat "$T/g.err" >&2; fail "row 8: record -p failed"; }
	[ "$(text_diff $TGT "$CR")" -gt 0 ] || fail "row 8: the calls were written back under gdb (expected them to stay)"
	echo go >"$T/gdb.go"
	wait $gdb || { cat "$T/gdb.out" >&2; fail "row 8: gdb"; }
	serve_more $TGT "$T/g.run" "row 8, gdb gone"
	bt_start bt_g1 "$BT_ENTRY"
	serve_more $TGT "$T/g.run" "row 8, bpftrace before the restore"
	stop_bpftrace $BT
	[ "$(bt_map bt_g1 entry)" -ge 1000 ] || fail "row 8: bpftrace saw $(bt_map bt_g1 entry) calls at tr_sub's entry, fewer than 1000"
	"$ATF" restore -p $TGT >"$T/restore.out" 2>&1 || { cat "$T/restore.out" >&2; fail "row 8: atftrace restore -p"; }
	assert_eq 0 "$(text_diff $TGT "$CR")" "row 8: bytes of the text that differ from the file after restore -p"
	bt_start bt_g2 "$BT_ENTRY"
	serve_more $TGT "$T/g.run" "row 8, bpftrace after the restore"
	stop_bpftrace $BT
	[ "$(bt_map bt_g2 entry)" -ge 2000 ] || fail "row 8: bpftrace saw $(bt_map bt_g2 entry) calls at tr_sub's entry after the restore, fewer than 2000"
	serve_end g 0
	echo "row 8: the session ended under gdb; the target ran on, restore -p restored, bpftrace harmless"
fi

# ---- row 9: the recorder killed with -9 while bpftrace registers --------------------------------
if row_on 9; then
	serve k
	rows_record k $TGT
	watch_states $TGT "$T/k.states"
	kill -STOP $REC
	bt_start bt_k "$BT_ENTRY"
	kill -KILL $REC
	wait $REC 2>/dev/null || true
	serve_more $TGT "$T/k.run" "row 9, recorder killed under bpftrace"
	stop_bpftrace $BT
	watch_stop
	assert_eq 0 "$(grep -c '^[tT]$' "$T/k.states" || true)" "row 9: times the target was seen stopped"
	[ "$(bt_map bt_k entry)" -ge 1000 ] || fail "row 9: bpftrace saw $(bt_map bt_k entry) calls at tr_sub's entry, fewer than 1000"
	"$ATF" restore -p $TGT >"$T/krestore.out" 2>&1 || { cat "$T/krestore.out" >&2; fail "row 9: atftrace restore -p"; }
	serve_end k 0
	echo "row 9: recorder killed while bpftrace registered: never stopped, ran on"
fi

# ---- row 10: the user's stop ------------------------------------------------------------------------
if row_on 10; then
	serve u
	rows_record u $TGT
	kill -STOP $TGT
	wait_state $TGT T "row 10: the user's stop"
	bt_start bt_u "$BT_ENTRY"
	# bpftrace's probe on tr_sub makes the session hand it back: a ptrace stop ('t') for as
	# long as that takes; then the user's stop again
	wait_for "$T/u.err" "^atftrace record: tr_sub \(cs_rows\) handed back: " "row 10: tr_sub handed back"
	wait_state $TGT T "row 10: the stopped target under bpftrace"
	kill -INT $REC
	wait $REC || { cat "$T/u.err" >&2; fail "row 10: record -p failed"; }
	assert_eq T "$(proc_state $TGT)" "row 10: the stopped target after the session"
	stop_bpftrace $BT
	assert_eq T "$(proc_state $TGT)" "row 10: the stopped target after bpftrace"
	kill -CONT $TGT
	serve_more $TGT "$T/u.run" "row 10, after the user's SIGCONT"
	serve_end u 1
	echo "row 10: the user's stop held through bpftrace and the session's end"
fi

# ---- row 11: perf stat over the sched tracepoints ---------------------------------------------------
if row_on 11; then
	command -v perf >/dev/null || fail "perf is missing (scripts/deps.sh installs linux-perf)"
	"$CR" gaps "$T/p.run" >"$T/p.out" &
	TGT=$!
	wait_file "$T/p.run" "row 11: the loop runs"
	rows_record p $TGT
	watch_states $TGT "$T/p.states"
	# a window without perf as long as the perf runs take, then the perf runs
	kill -USR1 $TGT
	wait_for "$T/p.out" "^gap " "row 11: the loop's first report"
	start=$(date +%s%N)
	for i in 1 2 3 4 5; do
		perf stat -e 'sched:*' -a -- true >"$T/perf$i.out" 2>&1 || { cat "$T/perf$i.out" >&2; fail "row 11: perf stat $i"; }
		[ "$(grep -c ' sched:' "$T/perf$i.out")" -gt 10 ] || fail "row 11: perf stat $i counted no sched events"
	done
	took=$(( ($(date +%s%N) - start) / 1000000 ))
	kill -USR1 $TGT
	wait_for "$T/p.out" "^gap .*" "row 11: the loop's report"
	timeout 60 bash -c 'until [ "$(grep -c "^gap " "$1")" -ge 2 ]; do sleep 0.02; done' _ "$T/p.out" \
		|| fail "row 11: no report after the perf runs"
	sleep "$(awk -v ms=$took 'BEGIN { print ms / 1000 }')"   # a measured window, as long as perf's
	watch_stop
	kill -USR1 $TGT
	timeout 60 bash -c 'until [ "$(grep -c "^gap " "$1")" -ge 3 ]; do sleep 0.02; done' _ "$T/p.out" \
		|| fail "row 11: no report after the window without perf"
	kill -INT $REC
	wait $REC || { cat "$T/p.err" >&2; fail "row 11: record -p failed"; }
	kill -TERM $TGT
	wait $TGT || fail "row 11: the target failed: $(cat "$T/p.out")"
	assert_eq 0 "$(grep -c '^[tT]$' "$T/p.states" || true)" "row 11: times the target was seen stopped"
	assert_eq "0 0" "$(sed -n 2p "$T/p.out" | awk '{ print $4 }') $(sed -n 3p "$T/p.out" | awk '{ print $4 }')" \
		"row 11: SIGCONTs the target received during the perf runs, and after"
	echo "row 11: 5 perf stat -e 'sched:*' -a in $took ms: 0 stops; longest pause $(sed -n 2p "$T/p.out" | awk '{ print $2 }') us (without perf: $(sed -n 3p "$T/p.out" | awk '{ print $2 }') us)"
fi
