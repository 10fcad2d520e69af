#!/usr/bin/env bash
# Runs libFuzzer targets, each for SECONDS, and prints one line per target with its executions.
#   tests/fuzz/run.sh SECONDS TARGET...
# The seeds in tests/fuzz/corpus/<target>/ are read, never written: new inputs go to
# $OUTPUT/fuzz/corpus/<target>/, and a crash to $OUTPUT/fuzz/crash-<target>-*. Exit 1 on a finding.
set -u
cd "$(dirname "$0")/../.."
OUTPUT=${OUTPUT:-.output}
secs=$1; shift
rc=0
for t in "$@"; do
	bin=$OUTPUT/fuzz/$t work=$OUTPUT/fuzz/corpus/$t log=$OUTPUT/fuzz/$t.log
	[ -x "$bin" ] || { echo "$t: missing $bin (make fuzz builds it)"; rc=1; continue; }
	mkdir -p "$work"
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$OUTPUT/fuzz/crash-$t-" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "$t: ${execs:-?} executions in ${secs}s, corpus $(ls "$work" | wc -l) inputs, nothing found"
	else
		echo "$t: FOUND something (log $log):"
		grep -E "ERROR|SUMMARY|runtime error|deadly signal|Test unit written" "$log" | head -n 10
		rc=1
	fi
done
exit $rc
