#!/usr/bin/env bash
# record -a --call-sites: a function handed back before a process is redirected is handed back
# in that process at once. On tests/targets/cs_waves (wv_outer calls wv_mov twice and wv_lea once,
# N times per wave, at each SIGUSR1), copied so that no other process of the host maps it:
#   - one process runs before the session and is redirected at its start; bpftrace registers a
#     uprobe on wv_mov, which is handed back (-v says so);
#   - a process started after that is redirected at its first traced call (its first wave):
#     wv_mov's two sites in it are handed back at once (-v: "kept on their entry (handed back
#     before)"), so bpftrace sees each of its calls of wv_mov in its second wave: exactly 2N
#     (redirected, they would enter past wv_mov's first bytes, unseen);
#   - the session's own counts are exact, and both processes' results right.
# bpftrace prints, at each file a cs_waves process opens (it creates DIR/PID.K after wave K),
# how many calls of wv_mov that process made since the last one.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
[ -x "$TARGETS/cs_waves" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/record_stats" ] || fail "build first: make OUTPUT=$OUTPUT tools"
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
APP=$T/cs_waves
cp "$TARGETS/cs_waves" "$APP"
N=40
mkdir "$T/up"

declare -A PID
wait_file() {   # file what
	timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.02; done' _ "$1" || fail "$2: no $1 within 60 s"
}
start_app() {   # name
	"$APP" "$T/up" $N >"$T/$1.out" &
	PID[$1]=$!
	wait_file "$T/up/${PID[$1]}.up" "$1 did not start"
}
wave() {        # name K: the K-th wave of name, and wait until it is done
	kill -USR1 "${PID[$1]}"
	wait_file "$T/up/${PID[$1]}.$2" "$1's wave $2"
}

start_app early
mkfifo "$T/ready"
"$ATF" record -a --call-sites -v -f "$APP:wv_*" -o "$T/s" --ready-file "$T/ready" 2>"$T/rec.err" &
REC=$!
timeout 120 cat "$T/ready" >/dev/null || { cat "$T/rec.err" >&2; fail "record -a --call-sites did not attach within 120 s"; }
assert_contains "$T/rec.err" "^atftrace record: process ${PID[early]}: 4 call sites redirected in [0-9.]+ ms$" "early redirected at the start"
bpftrace -e "BEGIN { printf(\"ready\\n\"); }
	uprobe:$APP:wv_mov { @c[pid] = @c[pid] + 1; }
	tracepoint:syscalls:sys_enter_openat /comm == \"cs_waves\"/ { printf(\"opened %d %d\\n\", pid, @c[pid]); @c[pid] = 0; }" \
	>"$T/bt" 2>&1 &
bt=$!
wait_for "$T/bt" "^ready$" "bpftrace attached"
wait_for "$T/rec.err" "^atftrace record: wv_mov \\(cs_waves\\) handed back: another tool registered a uprobe on it; 2 of its 2 redirected call sites written back" \
	"wv_mov handed back in the process redirected at the start"
wave early 1

start_app late
wave late 1             # its first traced calls: the recorder records it, then redirects it
wait_for "$T/rec.err" "^atftrace record: process ${PID[late]}: 4 call sites redirected in [0-9.]+ ms$" "the late process redirected"
[ "$(text_diff "${PID[late]}" "$APP" int3)" -gt 0 ] || fail "late: no redirected call in its text during the session"
wave late 2
stop_bpftrace $bt       # all it printed is in its output once it has ended
assert_eq "opened ${PID[late]} $((2 * N))" "$(grep "^opened ${PID[late]} " "$T/bt" | tail -1)" \
	"bpftrace's calls of wv_mov in the late process's second wave"
assert_eq "opened ${PID[early]} $((2 * N))" "$(grep "^opened ${PID[early]} " "$T/bt" | tail -1)" \
	"bpftrace's calls of wv_mov in the early process's wave"
assert_contains "$T/rec.err" "^atftrace record: process ${PID[late]}: 1 function that another tool probes kept on their entry \\(handed back before\\)$" \
	"wv_mov handed back at once in the process redirected later"
for n in early late; do
	kill -TERM "${PID[$n]}"
	wait "${PID[$n]}" || fail "$n exited with an error: $(cat "$T/$n.out")"
done
kill -INT $REC
wait $REC || { cat "$T/rec.err" >&2; fail "record -a --call-sites failed"; }
"$TOOLS/record_stats" "$T/s" >"$T/stats"
for n in early late; do
	w=$([ $n = early ] && echo 1 || echo 2)
	assert_eq "wv_lea $((w * N)) wv_mov $((2 * w * N)) wv_outer $((w * N))" \
		"$(awk -v p=${PID[$n]} '$1 == "call" && $2 == p { print $3, $4 }' "$T/stats" | sort | xargs)" \
		"$n: the session's calls per function"
done
echo "ok: wv_mov, handed back, stays on its entry in a process redirected later"
