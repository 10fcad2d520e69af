#!/usr/bin/env bash
# Runs the cmocka unit tests (built with ASan+UBSan), the end-to-end tests and a few seconds of
# each fuzz target (tests/fuzz/run.sh), then prints one closing line "N passed, N failed,
# N skipped". An e2e test exits 0 (pass), 77 (skip: no root or no BTF) or anything else (fail).
# Under ATFTRACE_REQUIRE_BPF=1 a skip is a failure.
#   tests/run_tests.sh [unit|e2e|fuzz] [NAME-FILTER]
set -u
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
what=${1:-all}
filter=${2:-}
export ATFTRACE_ROOT=$PWD OUTPUT
export ATFTRACE_BIN=${ATFTRACE_BIN:-$PWD/$OUTPUT/atftrace}
export ATFTRACE_BIN_ASAN=${ATFTRACE_BIN_ASAN:-$PWD/$OUTPUT/asan/atftrace}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

pass=0 fail=0 skip=0 failed=()
logdir=$OUTPUT/test-logs
mkdir -p "$logdir/unit" "$logdir/e2e"

run_one() {   # name, command...
	local name=$1; shift
	local log=$logdir/$name.log start=$SECONDS rc
	"$@" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); printf 'PASS  %-40s %3ss\n' "$name" $((SECONDS - start))
	elif [ $rc -eq 77 ] && [ "${ATFTRACE_REQUIRE_BPF:-0}" != 1 ]; then
		skip=$((skip + 1)); printf 'SKIP  %-40s (%s)\n' "$name" "$(tail -n 1 "$log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		[ $rc -eq 77 ] && echo "ATFTRACE_REQUIRE_BPF=1: a skip is a failure" >>"$log"
		printf 'FAIL  %-40s (exit %d)\n' "$name" $rc
		sed 's/^/      | /' "$log" | tail -n 40
	fi
}

if [ "$what" = all ] || [ "$what" = unit ]; then
	echo "== unit tests (cmocka, ASan+UBSan)"
	for t in "$OUTPUT"/asan/tests/test_*; do
		[ -x "$t" ] || continue
		n=$(basename "$t"); [[ -z $filter || $n == *$filter* ]] || continue
		run_one "unit/$n" "$t"
		grep -E '^\[  (PASSED|FAILED)  \]' "$logdir/unit/$n.log" 2>/dev/null | sed 's/^/      /'
	done
fi

if [ "$what" = all ] || [ "$what" = e2e ]; then
	echo "== end-to-end tests"
	for t in tests/e2e/test_*.sh; do
		[ -f "$t" ] || continue
		n=$(basename "$t" .sh); [[ -z $filter || $n == *$filter* ]] || continue
		run_one "e2e/$n" bash "$t"
	done
fi

if [ "$what" = all ] || [ "$what" = fuzz ]; then
	echo "== fuzz targets (libFuzzer, ASan+UBSan), ${FUZZ_SMOKE_SECONDS:-3}s each over tests/fuzz/corpus/"
	mkdir -p "$logdir/fuzz"
	for t in "$OUTPUT"/fuzz/fuzz_*; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		n=$(basename "$t"); [[ -z $filter || $n == *$filter* ]] || continue
		run_one "fuzz/$n" bash tests/fuzz/run.sh "${FUZZ_SMOKE_SECONDS:-3}" "$n"
		sed 's/^/      /' "$logdir/fuzz/$n.log"
	done
fi

echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]} (logs in $logdir)"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ $((pass + fail)) -gt 0 ]
