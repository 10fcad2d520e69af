#!/usr/bin/env bash
# record --call-sites (include/callsite.h), figures only; nothing here asserts a time.
# (1) ns per traced call (entry + return) of a function whose first instruction the kernel
#     single-steps (tests/targets/callsites: tr_mov, mov first), called from one direct site:
#     untraced, plain probes (--no-trampolines), the entry trampoline (--trampolines: nop5 probe
#     + uretprobe), a redirected call site (--call-sites: the emulated 1-byte-nop probes of the
#     function's entry and return blocks); against atftrace at a nop5 site (tests/targets/tramp_sites tr_nop5, plain probe)
#     and the same function through a pointer from a 3-byte site (`call *%r13`: too short to
#     redirect, its plain probe); then tests/targets/cs_indirect's in_mov (mov first) through
#     `call *N(%rip)`: untraced, plain probe, and the indirect stub (lookup, then the
#     entry block's and the shared return block's emulated nops). Best of $REPEAT runs of $N calls.
# (2) the share of traced calls that take the stubs, call, tail and indirect stubs alike
#     (bench/call_sites_share.py): sqlite3 with
#     every libsqlite3 function traced, $ROWS INSERT statements; bash with every function of
#     the shell traced, a loop of $ROWS iterations; python3 with every exported function of
#     the interpreter traced, $ROWS/10 json.dumps+loads (its _json module mapped by dlopen).
# (3) sqlite3 with every libsqlite3 function traced, $ROWS INSERTs: the wall time of the whole
#     session (launch to end) with entry trampolines (--trampolines), call sites (the default) and
#     --no-trampolines, best of $REPEAT; and whether the calls per function of --call-sites
#     equal those of --no-trampolines (they must: a check shown here, asserted on a small
#     library in tests/e2e/test_record_call_sites_plt.sh).
#   bench/bench_call_sites.sh      CS_BENCH_N=200000 CS_BENCH_REPEAT=3 CS_BENCH_ROWS=3000
set -u
cd "$(dirname "$0")/.."
source bench/lib.sh
CS=$PWD/${OUTPUT:-.output}/targets/callsites
TS=$PWD/${OUTPUT:-.output}/targets/tramp_sites
CI=$PWD/${OUTPUT:-.output}/targets/cs_indirect
N=${CS_BENCH_N:-200000}
REPEAT=${CS_BENCH_REPEAT:-3}
ROWS=${CS_BENCH_ROWS:-3000}
bench_probe_setup bench_call_sites "$CS" "$TS"
figure() {
	local field=$1
	shift
	rm -rf "$tmp/rec"
	"$@" 2>/dev/null | awk -v f="$field" 'NF >= f { v = $f } END { print v }'
}
best() { bench_lowest "$REPEAT" figure "$@"; }

echo "call sites: ns per traced call (entry + return), best of $REPEAT x $N; load: $(cut -d' ' -f1-3 /proc/loadavg)"
none=$(best 3 "$CS" time direct "$N")
plain=$(best 3 "$ATF" record --no-trampolines -o "$tmp/rec" -f tr_mov -- "$CS" time direct "$N")
tr=$(best 3 "$ATF" record --trampolines -o "$tmp/rec" -f tr_mov -- "$CS" time direct "$N")
cs=$(best 3 "$ATF" record --call-sites -o "$tmp/rec" -f tr_mov -- "$CS" time direct "$N")
ind=$(best 3 "$ATF" record --call-sites -o "$tmp/rec" -f tr_mov -- "$CS" time mov "$N")
indu=$(best 3 "$CI" time "$N")
indp=$(best 3 "$ATF" record --no-trampolines -o "$tmp/rec" -f in_mov -- "$CI" time "$N")
indcs=$(best 3 "$ATF" record --call-sites -o "$tmp/rec" -f in_mov -- "$CI" time "$N")
nop5=$(best 3 "$ATF" record --no-trampolines -o "$tmp/rec" -f tr_nop5 -- "$TS" nop5 "$N")
printf '%-34s %8s\n' "untraced" "$none" "plain probe (single-step)" "$plain" \
	"entry trampoline (emulated nop + uretprobe)" "$tr" "call site (two emulated nops)" "$cs" \
	"--call-sites, indirect call (plain)" "$ind" "plain probe at a nop5 site" "$nop5" \
	"call *N(%rip), untraced" "$indu" "call *N(%rip), plain probe" "$indp" \
	"call *N(%rip), indirect stub" "$indcs"

SQLITE=$(command -v sqlite3 || true)
LIB=$([ -n "$SQLITE" ] && ldd "$SQLITE" | awk '$1 ~ /^libsqlite3\.so/ { print $3 }')
command -v bpftool >/dev/null || { echo "share: bpftool missing"; exit 0; }
echo "call sites: share of traced calls through the stubs"
if [ -n "$LIB" ]; then
	{
		echo "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);"
		for i in $(seq "$ROWS"); do echo "INSERT INTO t(b) VALUES ('row $i');"; done
		echo "SELECT 'MARK';"
	} >"$tmp/q.sql"
	echo "sqlite3 ($ROWS INSERTs, every function of $(basename "$(readlink -f "$LIB")")): $(python3 bench/call_sites_share.py \
		"$ATF" "$tmp/sq" "$tmp/q.sql" -f "$(readlink -f "$LIB"):*" -- "$SQLITE" -batch :memory:)"
	# wall seconds of one session of MODE (--trampolines, --call-sites, --no-trampolines); its
	# calls per function in $tmp/MODE.calls
	wall() {
		local mode=$1 t0 t1 args=()
		[ "$mode" = default ] || args=("$mode")
		rm -rf "$tmp/w"
		t0=$(date +%s.%N)
		"$ATF" record "${args[@]}" -o "$tmp/w" -f "$(readlink -f "$LIB"):*" -- "$SQLITE" -batch :memory: \
			<"$tmp/q.sql" >/dev/null 2>&1 || return
		t1=$(date +%s.%N)
		"$ATF" report "$tmp/w" | awk 'NR > 2 { print $13, $5 }' | sort >"$tmp/$mode.calls"
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
	}
	t0=$(date +%s.%N); "$SQLITE" -batch :memory: <"$tmp/q.sql" >/dev/null; t1=$(date +%s.%N)
	echo "sqlite3 ($ROWS INSERTs), wall s, best of $REPEAT: untraced $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')," \
		"entry trampolines $(bench_lowest "$REPEAT" wall --trampolines), call sites $(bench_lowest "$REPEAT" wall --call-sites)," \
		"--no-trampolines $(bench_lowest "$REPEAT" wall --no-trampolines)"
	if cmp -s "$tmp/--call-sites.calls" "$tmp/--no-trampolines.calls"; then
		echo "sqlite3: calls per function, --call-sites = --no-trampolines ($(wc -l <"$tmp/--call-sites.calls") functions)"
	else
		echo "sqlite3: calls per function DIFFER between --call-sites and --no-trampolines"
	fi
fi
printf 'for ((i = 0; i < %d; i++)); do x=$((i * 2)); s="${s:0:64}$x"; done\necho MARK\n' "$ROWS" >"$tmp/b.sh"
echo "bash (a loop of $ROWS, every function of bash): $(python3 bench/call_sites_share.py \
	"$ATF" "$tmp/bash" "$tmp/b.sh" -f "$(readlink -f /bin/bash):*" -- /bin/bash -s)"
# python3 (Debian's, stripped: its exported functions) running json.dumps/loads: _json is mapped
# by the import (dlopen), after the session started, and calls the interpreter through its PLT;
# its slots are bound after ld.so announces it, so they are redirected at the next module
# mapped (the decimal import); one line of Python per line of input
PY=/usr/bin/python3
if [ -x "$PY" ]; then
	printf '%s\n' 'import json' 'import decimal' \
		'd = {"k%d" % i: [i, str(i), {"x": i * 1.5, "y": None}] for i in range(100)}' \
		"for i in range($((ROWS / 10))): json.loads(json.dumps(d))" 'print("MARK")' >"$tmp/j.py"
	echo "python3 ($((ROWS / 10)) json dumps+loads, every function of $(basename "$(readlink -f "$PY")")): $(python3 bench/call_sites_share.py \
		"$ATF" "$tmp/py" "$tmp/j.py" -f "$(readlink -f "$PY"):*" -- "$PY" -u -c \
		'import sys
for l in sys.stdin: exec(l)')"
fi
