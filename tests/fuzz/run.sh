#!/usr/bin/env bash
# Runs libFuzzer targets, each for SECONDS, and prints one line per target with its executions.
#   tests/fuzz/run.sh SECONDS TARGET...
# The seeds in tests/fuzz/corpus/<target>/ are read, never written: new inputs go to
# $OUTPUT/fuzz/corpus/<target>/, and a crash to $OUTPUT/fuzz/crash-<target>-*. Exit 1 on a finding,
# and on a scratch directory a target that exited normally left behind (tests/fuzz/fuzz_common.h).
set -u
cd "$(dirname "$0")/../.."
OUTPUT=${OUTPUT:-.output}
secs=$1; shift
rc=0
for t in "$@"; do
	bin=$OUTPUT/fuzz/$t work=$OUTPUT/fuzz/corpus/$t log=$OUTPUT/fuzz/$t.log
	[ -x "$bin" ] || { echo "$t: missing $bin (make fuzz builds it)"; rc=1; continue; }
	mkdir -p "$work"
	before=$(ls -d /dev/shm/atftrace-fuzz.* 2>/dev/null | sort || true)
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$OUTPUT/fuzz/crash-$t-" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 &
	pid=$!
	status=0
	wait $pid || status=$?
	# what appeared while it ran and is its own: named with its pid, or with none (older builds)
	left=$(comm -13 <(echo "$before") <(ls -d /dev/shm/atftrace-fuzz.* 2>/dev/null | sort) |
		grep -E "^/dev/shm/atftrace-fuzz\.($pid\.)?[A-Za-z0-9]{6}\$" || true)
	if [ $status -eq 0 ] && [ -n "$left" ]; then
		echo "$t: left its scratch directory behind: $left"
		rm -rf $left
		rc=1
	elif [ $status -eq 0 ]; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "$t: ${execs:-?} executions in ${secs}s, corpus $(ls "$work" | wc -l) inputs, nothing found"
	else
		echo "$t: FOUND something (log $log):"
		grep -E "ERROR|SUMMARY|runtime error|deadly signal|Test unit written" "$log" | head -n 10
		rc=1
	fi
done
exit $rc
