#!/usr/bin/env bash
# make bench: run every bench/bench_*.sh in turn. Each prints its own figures (ratios measured in
# one run); nothing here asserts a time. Results are also appended to $OUTPUT/bench/results.txt.
#   bench/run.sh [NAME-FILTER]
set -u
cd "$(dirname "$0")/.."
export OUTPUT=${OUTPUT:-.output} ATFTRACE_ROOT=$PWD
mkdir -p "$OUTPUT/bench"
res=$OUTPUT/bench/results.txt
for b in bench/bench_*.sh; do
	[ -f "$b" ] || continue
	[[ -z ${1:-} || $b == *$1* ]] || continue
	echo "== $(basename "$b" .sh)" | tee -a "$res"
	bash "$b" 2>&1 | tee -a "$res"
done
