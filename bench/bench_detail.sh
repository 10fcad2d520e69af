#!/usr/bin/env bash
# Detail cost (printed, never asserted): extra time per traced event when it carries registers
# and a 256-byte stack snapshot, against index-only events of the same session.
#
# One recording with --detail-on trigger_hot: the target alternates `hot N` (N calls of hot(),
# index-only events) and `trighot N` (trigger_hot() calling hot() N times inside a detail
# window), each timed in the target. hot() starts with a 5-byte nop, the cheapest probe site, so
# probe noise does not drown the figure. Both phases run the same probes on the same ring, so the difference per
# event is the detail record's cost (bigger reserve, register reads, stack copy). Rounds alternate
# the two to cancel drift; the figure is the median over rounds.
#   bench/bench_detail.sh [CALLS-PER-PHASE] [ROUNDS] [STACK-BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
ATF=$PWD/$OUTPUT/atftrace
TARGETS=$PWD/$OUTPUT/targets
N=${1:-20000}
ROUNDS=${2:-15}
STACK=${3:-256}
[ "$(id -u)" = 0 ] || { echo "bench_detail: needs root; skipped"; exit 0; }
T=$(mktemp -d /tmp/atftrace-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkfifo "$T/cmd" "$T/ack"

# untraced baseline: the same commands with no recorder
timed_rounds() {   # out-file: "plain_ns detail_ns" per round
	local r plain det
	echo "timed hot $N" >&3; read -r _ _ <&4       # warm-up (first hits optimise the probes)
	echo "timed trighot $N" >&3; read -r _ _ <&4
	for ((r = 0; r < ROUNDS; r++)); do
		echo "timed hot $N" >&3; read -r _ plain <&4
		echo "timed trighot $N" >&3; read -r _ det <&4
		echo "$plain $det"
	done >"$1"
	echo quit >&3
}

"$TARGETS/detail_args" script "$T/cmd" "$T/ack" &
exec 3<>"$T/cmd" 4<>"$T/ack"
timed_rounds "$T/untraced"
wait
exec 3>&- 4<&-

"$ATF" record -o "$T/s" --ring-size 64M --stack-bytes "$STACK" -f hot -f trigger_hot --detail-on trigger_hot -- \
	"$TARGETS/detail_args" script "$T/cmd" "$T/ack" 2>"$T/err" &
rec=$!
exec 3<>"$T/cmd" 4<>"$T/ack"
timed_rounds "$T/traced"
wait $rec || { cat "$T/err" >&2; echo "bench_detail: record failed"; exit 1; }
exec 3>&- 4<&-
lost=$(python3 -c 'import json,glob,sys; m=json.load(open(glob.glob(sys.argv[1]+"/pid_*/manifest.json")[0])); print(m.get("lost_events",0), m.get("lost_detail",0))' "$T/s")

# per event: a plain phase has 2N events, a detail phase 2N + 2 (trigger's own call and return)
python3 - "$T/untraced" "$T/traced" "$N" "$STACK" "$lost" <<'PY'
import statistics, sys
un = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
tr = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
n, stack = int(sys.argv[3]), sys.argv[4]
lost_ev, lost_det = sys.argv[5].split()
ev_plain, ev_det = 2 * n, 2 * n + 2
med = statistics.median
base = med([p / ev_plain for p, d in un])
plain = med([p / ev_plain for p, d in tr])
det = med([d / ev_det for p, d in tr])
extra = med([d / ev_det - p / ev_plain for p, d in tr])
print("detail: %d calls per phase, %d rounds, %s-byte stack snapshots, one session" % (n, len(tr), stack))
print("  untraced                %8.0f ns/event" % base)
print("  index-only event        %8.0f ns/event (traced, outside the window)" % plain)
print("  event with detail       %8.0f ns/event (traced, inside the window)" % det)
print("  extra cost of detail    %+8.0f ns/event (goal <= +300 ns)" % extra)
print("  lost events / detail    %s / %s" % (lost_ev, lost_det))
PY
