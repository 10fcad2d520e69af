#!/usr/bin/env bash
# Entry trampolines (record --trampolines), figures only; nothing here asserts a time.
# (1) ns per traced call (entry + return) of one hot function per first instruction
#     (tests/targets/tramp_sites: lea, mov, sub rsp, rip-relative load/store): untraced,
#     atftrace record with plain probes, atftrace record --trampolines; against the floor: the
#     nop5 site (tr_nop5) with empty BPF programs (bench/probe_bench), and atftrace at nop5.
#     tr-nop5: what a trampoline call costs more than atftrace at a nop5 site, which the kernel
#     optimises: the trampoline's probe site is a nop it emulates (user/probe/trampoline_plan.c),
#     so that forked children need no fix-up. Best of $REPEAT runs of $N calls.
# (2) sqlite3 inserting 20,000 rows with every libsqlite3 function traced: the workload's own
#     time (sqlite3 .timer), untraced; atftrace --trampolines; atftrace plain; bpftrace counting
#     every function (uprobe + uretprobe), and how long bpftrace takes to detach. Events and
#     lost events of each atftrace run. TRAMP_BENCH_BPFTRACE=0 leaves bpftrace out (its detach
#     takes minutes: about 110 ms per probe).
# (3) $MT_THREADS threads calling a hot function that starts with a rip-relative load (tr_ripk),
#     $MT_N calls each: wall time untraced, plain probes, trampolines.
# (4) the registration guard: ns per getppid syscall of any process on the machine, with no
#     session, with a -p session with plain probes, and with a -p session on trampolines
#     (which guards its target: bpf/reg_guard.bpf.h). Best of $REPEAT runs of $N syscalls.
#   bench/bench_trampolines.sh      TRAMP_BENCH_N=200000 TRAMP_BENCH_REPEAT=3 MT_THREADS=8 MT_N=200000
#   TRAMP_BENCH_PARTS="sites sqlite threads guard" (the default: all four)
set -u
cd "$(dirname "$0")/.."
source bench/lib.sh
TS=$PWD/${OUTPUT:-.output}/targets/tramp_sites
N=${TRAMP_BENCH_N:-200000}
REPEAT=${TRAMP_BENCH_REPEAT:-3}
MT_THREADS=${MT_THREADS:-8}
MT_N=${MT_N:-200000}
ROWS=20000
bench_probe_setup bench_trampolines "$TS"
# figure FIELD CMD...: field FIELD of the last line CMD prints that has one
figure() {
	local field=$1
	shift
	rm -rf "$tmp/rec"
	"$@" 2>/dev/null | awk -v f="$field" 'NF >= f { v = $f } END { print v }'
}
best() { bench_lowest "$REPEAT" figure "$@"; }   # best FIELD CMD...
PARTS=" ${TRAMP_BENCH_PARTS:-sites sqlite threads guard} "
part() { [[ $PARTS == *" $1 "* ]]; }
ratio() { bench_ratio "$@"; }

# ---- (1) per site ----------------------------------------------------------------------------------
if part sites; then
echo "trampolines: ns per traced call (entry + return), best of $REPEAT x $N; load: $(cut -d' ' -f1-3 /proc/loadavg)"
floor=$(best 3 "$PB" cost empty session tr_nop5 "$TS" nop5 "$N")
atf_nop5=$(best 3 "$ATF" record --no-trampolines -o "$tmp/rec" -f tr_nop5 -- "$TS" nop5 "$N")
echo "floor: nop5 site, empty programs $floor; atftrace record at the nop5 site $atf_nop5"
printf '%-5s %9s %9s %12s %10s %12s %8s\n' site untraced plain trampolines plain/tr tr/floor tr-nop5
for site in lea mov sub rip; do
	none=$(best 3 "$TS" "$site" "$N")
	plain=$(best 3 "$ATF" record --no-trampolines -o "$tmp/rec" -f "tr_$site" -- "$TS" "$site" "$N")
	tr=$(best 3 "$ATF" record --trampolines -o "$tmp/rec" -f "tr_$site" -- "$TS" "$site" "$N")
	printf '%-5s %9s %9s %12s %10s %12s %8s\n' "$site" "$none" "$plain" "$tr" "$(ratio "$plain" "$tr")" \
		"$(ratio "$tr" "$floor")" "$(awk -v a="$tr" -v b="$atf_nop5" 'BEGIN { printf "%+.0f", a - b }')"
done
fi

# ---- (2) sqlite3, every libsqlite3 function ------------------------------------------------------
SQLITE=$(command -v sqlite3 || true)
LIB=$([ -n "$SQLITE" ] && ldd "$SQLITE" | awk '$1 ~ /^libsqlite3\.so/ { print $3 }')
if ! part sqlite; then
	:
elif [ -n "$LIB" ]; then
	LIB=$(readlink -f "$LIB")
	cat >"$tmp/q.sql" <<SQL
.timer on
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < $ROWS)
INSERT INTO t(b) SELECT printf('row %d', x) FROM n;
SELECT count(*) FROM t;
SQL
	# the workload's own time: the sum of sqlite3's "Run Time: real" lines
	runtime() { awk '/^Run Time: real/ { s += $4 } END { printf "%.3f", s }' "$1"; }
	sq() { "$@" -batch -init "$tmp/q.sql" :memory: .quit </dev/null >"$tmp/sq.out" 2>/dev/null; }
	# another session's uprobes on libsqlite3 (a test running meanwhile) would slow every run
	others=$(bpftool link list 2>/dev/null | grep -c uprobe_multi)
	[ "$others" = 0 ] || echo "note: $others uprobe-multi links of other sessions exist; figures may be off"
	sq "$SQLITE"; untraced=$(runtime "$tmp/sq.out")
	rec_sq() {   # name options...
		local name=$1
		shift
		rm -rf "$tmp/rec"
		/usr/bin/time -f '%e' -o "$tmp/$name.wall" "$ATF" record "$@" -o "$tmp/rec" \
			-f 'libsqlite3.so.0:*' -- "$SQLITE" -batch -init "$tmp/q.sql" :memory: .quit \
			</dev/null >"$tmp/sq.out" 2>"$tmp/$name.err"
		printf '%s %s %s %s' "$(runtime "$tmp/sq.out")" "$(cat "$tmp/$name.wall")" \
			"$(sed -n 's/.*record: \([0-9]*\) events.*/\1/p' "$tmp/$name.err")" \
			"$(sed -n 's/.* \([0-9]*\) lost,.*/\1/p' "$tmp/$name.err")"
	}
	read -r tr_run tr_wall tr_ev tr_lost <<<"$(rec_sq tr --trampolines)"
	read -r pl_run pl_wall pl_ev pl_lost <<<"$(rec_sq plain --no-trampolines)"
	bt_run=n/a bt_detach=n/a
	if [ "${TRAMP_BENCH_BPFTRACE:-1}" = 1 ] && command -v bpftrace >/dev/null; then
		[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
		nfun=$(bpftrace -l "uprobe:$LIB:*" 2>/dev/null | wc -l)
		BPFTRACE_MAX_PROBES=$((2 * nfun + 16)) \
			bpftrace -e "uprobe:$LIB:* { @c = count(); } uretprobe:$LIB:* { @r = count(); }" \
			>"$tmp/bt.log" 2>&1 &
		bt=$!
		# attached once the kernel lists its perf events (bpftrace's own output is buffered)
		while [ "$(bpftool perf list 2>/dev/null | grep -c "^pid $bt ")" -lt $((2 * nfun)) ]; do
			kill -0 $bt 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 $bt 2>/dev/null; then
			sq "$SQLITE"; bt_run=$(runtime "$tmp/sq.out")
			t0=$(date +%s.%N)
			kill -INT $bt; wait $bt 2>/dev/null
			bt_detach=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		else
			echo "bpftrace did not attach: $(grep -m1 ERROR "$tmp/bt.log")"
		fi
	fi
	echo
	echo "sqlite3, $ROWS rows inserted, every libsqlite3 function traced; seconds of sqlite3's own run time (whole command)"
	printf '%-22s %9s %9s %10s %6s\n' "" run wall events lost
	printf '%-22s %9s\n' untraced "$untraced"
	printf '%-22s %9s %9s %10s %6s\n' "atftrace --trampolines" "$tr_run" "$tr_wall" "$tr_ev" "$tr_lost"
	printf '%-22s %9s %9s %10s %6s\n' "atftrace plain" "$pl_run" "$pl_wall" "$pl_ev" "$pl_lost"
	printf '%-22s %9s %9s\n' "bpftrace counting" "$bt_run" "(detach ${bt_detach} s)"
	echo "trampolines / bpftrace: $(ratio "$tr_run" "$bt_run") (goal <= 0.20); plain / trampolines: $(ratio "$pl_run" "$tr_run")"
else
	echo "sqlite3 or libsqlite3 missing: (2) skipped"
fi

# ---- (3) many threads, one hot function starting with a rip-relative load -----------------------
if part threads; then
echo
echo "$MT_THREADS threads x $MT_N calls of tr_ripk (rip-relative load first), seconds (best of $REPEAT)"
mt_none=$(best 4 "$TS" mt "$MT_THREADS" "$MT_N")
mt_plain=$(best 4 "$ATF" record --no-trampolines -o "$tmp/rec" -f tr_ripk -- "$TS" mt "$MT_THREADS" "$MT_N")
mt_tr=$(best 4 "$ATF" record --trampolines -o "$tmp/rec" -f tr_ripk -- "$TS" mt "$MT_THREADS" "$MT_N")
printf 'untraced %s, plain %s (%sx), trampolines %s (%sx)\n' "$mt_none" "$mt_plain" \
	"$(ratio "$mt_plain" "$mt_none")" "$mt_tr" "$(ratio "$mt_tr" "$mt_none")"
fi

# ---- (4) the registration guard: what every syscall of the machine pays meanwhile ---------------
part guard || exit 0
# syscall_cost OPTION: ns per syscall of another process while a -p session with OPTION records
# a served tramp_sites ("" : no session)
syscall_cost() {
	local rec="" target
	if [ -n "$1" ]; then
		rm -rf "$tmp/served" "$tmp/ready" "$tmp/grec"; mkfifo "$tmp/served" "$tmp/ready"
		"$TS" serve "$tmp/served" >/dev/null & target=$!
		cat "$tmp/served" >/dev/null
		"$ATF" record "$1" -p $target -o "$tmp/grec" -f tr_lea --ready-file "$tmp/ready" 2>/dev/null &
		rec=$!
		cat "$tmp/ready" >/dev/null
	fi
	best 3 "$TS" syscalls "$N"
	if [ -n "$rec" ]; then
		kill -INT $rec; wait $rec 2>/dev/null
		kill -TERM $target; wait $target 2>/dev/null
	fi
}
echo
echo "registration guard: ns per getppid syscall of another process (best of $REPEAT x $N)"
sc_none=$(syscall_cost "")
sc_plain=$(syscall_cost --no-trampolines)
sc_guard=$(syscall_cost --trampolines)
echo "no session $sc_none; a -p session with plain probes $sc_plain; with trampolines (guarded) $sc_guard"
