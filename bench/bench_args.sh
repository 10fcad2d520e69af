#!/usr/bin/env bash
# Typed-argument cost (printed, never asserted): ns per traced call (entry + return) of three
# nop5 functions in one session (bench/args_bench.c): no spec, -A/-R integers only (registers
# in a plain detail record), and a string read at the call. The extra over "no spec" is the
# typed values' cost; the run untraced shows the loop's own.
#   bench/bench_args.sh [CALLS-PER-PHASE] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
ATF=$PWD/$OUTPUT/atftrace
BIN=$PWD/$OUTPUT/bench/args_bench
N=${1:-20000}
ROUNDS=${2:-15}
[ "$(id -u)" = 0 ] || { echo "bench_args: needs root; skipped"; exit 0; }
[ -x "$BIN" ] || { echo "bench_args: $BIN missing (make bench)" >&2; exit 1; }
T=$(mktemp -d /tmp/atftrace-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT

read -r _ u_plain _ u_int _ u_str <<<"$("$BIN" "$N" "$ROUNDS")"
"$ATF" record -o "$T/s" -f 'h_*' -A 'h_int@arg1/x,arg2/i32' -R 'h_int@retval/i32' \
	-A 'h_str@arg1/s,arg2/i32' -R 'h_str@retval/i32' -- "$BIN" "$N" "$ROUNDS" >"$T/out" 2>"$T/err" \
	|| { cat "$T/err" >&2; exit 1; }
read -r _ plain _ int _ str <"$T/out"
echo "untraced: $u_plain / $u_int / $u_str ns per call"
echo "traced, ns per call (entry + return): no spec $plain, integers $int (+$((int - plain))), string + integers $str (+$((str - plain)))"
