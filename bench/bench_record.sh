#!/usr/bin/env bash
# Recorder figures (printed, never asserted): two threads calling a traced function at full rate
# for 10 s on the default ring (16 MiB per CPU), then
#   - lost events (goal 0), from the manifest
#   - recorder CPU time / traced threads' CPU time (goal < 10%), from getrusage and /proc/PID/stat
#   - events recorded per second
#   bench/bench_record.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
ATF=$PWD/$OUTPUT/atftrace
TARGETS=$PWD/$OUTPUT/targets
SECS=${1:-10}
[ "$(id -u)" = 0 ] || { echo "bench_record: needs root; skipped"; exit 0; }
T=$(mktemp -d /tmp/atftrace-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkfifo "$T/ready"

# The recorder runs under python so its own CPU time comes from getrusage(RUSAGE_CHILDREN).
python3 - "$T/rusage" "$ATF" record --duration "$SECS" -o "$T/s" --ready-file "$T/ready" \
	-f thread_work -f thread_main -- "$TARGETS/threads" 2 2000000000 2>"$T/err" <<'PY' &
import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%d %.3f\n" % (rc, r.ru_utime + r.ru_stime))
PY
wrapper=$!
timeout 60 cat "$T/ready" >/dev/null
target=$(basename "$(ls -d "$T"/s/pid_*)"); target=${target#pid_}
# the target's CPU time while traced: sampled as the recorder ends (the target keeps running)
tick=$(getconf CLK_TCK)
target_cpu=0
while kill -0 $wrapper 2>/dev/null; do
	target_cpu=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$target/stat" 2>/dev/null || echo "$target_cpu")
	[ -s "$T/rusage" ] && break
	sleep 0.2
done
wait $wrapper || true
kill "$target" 2>/dev/null || true
read -r rc rec_cpu <"$T/rusage"
# the fixed cost (BPF load and verification, attach, exit) from a one-call session
python3 - "$T/rusage0" "$ATF" record -o "$T/s0" -f chain_a -- "$TARGETS/call_chain" 1 2>/dev/null <<'PY'
import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%d %.3f\n" % (rc, r.ru_utime + r.ru_stime))
PY
read -r _ fixed_cpu <"$T/rusage0"
target_s=$(awk -v t="$target_cpu" -v k="$tick" 'BEGIN { printf "%.2f", t / k }')
events=$(python3 -c 'import json,glob,sys; m=json.load(open(glob.glob(sys.argv[1]+"/pid_*/manifest.json")[0])); print(sum(t["index_events"] for t in m["threads"]), m["lost_events"], m["time_end_ns"]-m["time_start_ns"])' "$T/s")
read -r nev lost span <<<"$events"
echo "record: 2 threads at full rate, ${SECS}s, default ring (exit $rc)"
echo "  events recorded       $nev ($(awk -v n="$nev" -v s="$span" 'BEGIN { printf "%.0f", n / (s / 1e9) }')/s)"
echo "  lost events           $lost (goal 0)"
echo "  recorder CPU          ${rec_cpu}s"
echo "  traced threads' CPU   ${target_s}s"
echo "  recorder fixed cost   ${fixed_cpu}s (a one-call session: BPF load, attach, exit)"
echo "  recorder / traced     $(awk -v a="$rec_cpu" -v b="$target_s" 'BEGIN { printf "%.1f%%", (b > 0 ? 100 * a / b : 0) }') (goal < 10%)"
echo "  same, without fixed   $(awk -v a="$rec_cpu" -v f="$fixed_cpu" -v b="$target_s" 'BEGIN { printf "%.1f%%", (b > 0 ? 100 * (a - f) / b : 0) }')"
