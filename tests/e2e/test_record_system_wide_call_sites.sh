#!/usr/bin/env bash
# record -a --call-sites: a system-wide session redirects the direct calls of every process that
# maps the traced module, as -p does one. On tests/targets/cs_waves (wv_outer calls the mov- and
# lea-first wv_mov twice and wv_lea once, N times per wave, at each SIGUSR1), copied so that no
# other process of the host maps it (other sessions run on this host):
#   - two processes started before the session are redirected at its start, one started after
#     it at its first traced call (-v says so for each, by pid); a child that one of them forks
#     during the session inherits its redirected calls, is traced through them, and gets its
#     calls written back at the end too; one that calls exec loses its redirection with its old
#     image and is redirected again as the new program;
#   - exact calls per process and function, exact nesting (wv_outer at depth 0, its three calls
#     under it), nothing lost or unbalanced;
#   - the redirected calls are in each process's text during the session and gone after it:
#     the text of each process still running is the file's (read through /proc/PID/mem);
#   - each process's output equals an untraced run's.
# Synchronisation: each process writes DIR/PID.up when it waits for signals and DIR/PID.K after
# its K-th wave; the recorder opens its --ready-file FIFO once its probes and stubs are up.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
[ -x "$TARGETS/cs_waves" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/record_stats" ] || fail "build first: make OUTPUT=$OUTPUT tools"
APP=$T/cs_waves
cp "$TARGETS/cs_waves" "$APP"
N=40
mkdir "$T/up"

declare -A PID SUF
wait_file() {   # file what
	timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.02; done' _ "$1" || fail "$2: no $1 within 60 s"
}
start_app() {   # name
	"$APP" "$T/up" $N >"$T/$1.out" &
	PID[$1]=$!
	wait_file "$T/up/${PID[$1]}.up" "$1 did not start"
}
fork_app() {    # name child: name forks child (SIGUSR2), which waits for signals as name does
	kill -USR2 "${PID[$1]}"
	wait_file "$T/up/${PID[$1]}.forked" "$1's fork"
	PID[$2]=$(cat "$T/up/${PID[$1]}.forked")
	EXIT_PIDS+=("${PID[$2]}")
	wait_file "$T/up/${PID[$2]}.up" "$2 did not start"
}
wave() {        # name K: the K-th wave of name, and wait until it is done
	kill -USR1 "${PID[$1]}"
	wait_file "$T/up/${PID[$1]}.${SUF[$1]:-}$2" "$1's wave $2"
}
end_app() {
	kill -TERM "${PID[$1]}"
	wait "${PID[$1]}" || fail "$1 exited with an error: $(cat "$T/$1.out")"
}

# ---- the untraced run's output ----------------------------------------------------------------
start_app ref
wave ref 1
wave ref 2
end_app ref

# ---- two processes before the session, one after it ----------------------------------------------
start_app early1
start_app early2
mkfifo "$T/ready"
"$ATF" record -a --call-sites -v -f "$APP:wv_*" -o "$T/s" --ready-file "$T/ready" 2>"$T/rec.err" &
REC=$!
timeout 120 cat "$T/ready" >/dev/null || { cat "$T/rec.err" >&2; fail "record -a --call-sites did not attach within 120 s"; }
for n in early1 early2; do
	assert_contains "$T/rec.err" "^atftrace record: process ${PID[$n]}: 4 call sites redirected in [0-9.]+ ms$" "$n redirected at the start"
	[ "$(text_diff "${PID[$n]}" "$APP")" -gt 0 ] || fail "$n: no redirected call in its text during the session"
done
assert_contains "$T/rec.err" "^atftrace record: --call-sites: 2 running processes redirected" "the processes redirected at the start"
wave early1 1
wave early2 1
fork_app early2 child   # its stdout is early2's: early2.out gets the child's wave too
[ "$(text_diff "${PID[child]}" "$APP")" -gt 0 ] || fail "child: no inherited redirected call in its text"
wave child 1
start_app late
wave late 1             # its first traced calls: the recorder records it, then redirects it
wait_for "$T/rec.err" "^atftrace record: process ${PID[late]}: 4 call sites redirected in [0-9.]+ ms$" "the late process redirected"
[ "$(text_diff "${PID[late]}" "$APP")" -gt 0 ] || fail "late: no redirected call in its text during the session"
wave late 2             # through its stubs
wave early1 2
# exec: its redirected calls go with its old image; the new program is redirected afresh
PID[early1x]=${PID[early1]}
SUF[early1x]=exec.
kill -HUP "${PID[early1]}"
wait_file "$T/up/${PID[early1]}.exec.up" "early1's exec"
wave early1x 1
wait_for "$T/rec.err" "^atftrace record: process ${PID[early1]} called exec: its call sites went with its old program$" "early1's exec noticed"
timeout 60 bash -c 'until [ "$(grep -cE "^atftrace record: process $2: 4 call sites redirected in [0-9.]+ ms$" "$1")" = 2 ]; do sleep 0.02; done' \
	_ "$T/rec.err" "${PID[early1]}" || { cat "$T/rec.err" >&2; fail "early1 not redirected again after its exec"; }
[ "$(text_diff "${PID[early1]}" "$APP")" -gt 0 ] || fail "early1: no redirected call in its new program's text"
wave early1x 2          # through the new program's stubs
kill -INT $REC
wait $REC || { cat "$T/rec.err" >&2; fail "record -a --call-sites failed"; }
for n in early1 early2 late child; do
	assert_eq 0 "$(text_diff "${PID[$n]}" "$APP")" "$n: bytes of its text that differ from the file after the session"
done
assert_contains "$T/rec.err" "^atftrace record: process ${PID[child]}: the call sites it inherited written back$" "the child's restore"
kill -TERM "${PID[child]}"
# early2 does not reap it: ended is a zombie
timeout 60 bash -c 'until [ "$(awk "{ print \$3 }" /proc/"$1"/stat 2>/dev/null || echo Z)" = Z ]; do sleep 0.02; done' _ "${PID[child]}" \
	|| fail "the child did not end at SIGTERM"
if grep -q "process [0-9]*: .*plain probes" "$T/rec.err"; then
	fail "a process of ours kept plain probes: $(grep 'plain probes' "$T/rec.err")"
fi
for n in early1 early2 late; do end_app "$n"; done

# ---- outputs: the untraced run's, wave by wave ------------------------------------------------------
cat "$T/ref.out" "$T/ref.out" >"$T/ref2.out"
cmp -s "$T/ref2.out" "$T/early1.out" || fail "early1's output (two waves, exec, two waves) differs from the untraced run's: $(diff "$T/ref2.out" "$T/early1.out" | head -4)"
for n in late; do
	cmp -s "$T/ref.out" "$T/$n.out" || fail "$n's output differs from the untraced run's: $(diff "$T/ref.out" "$T/$n.out" | head -4)"
done
assert_eq "$(head -n 1 "$T/ref.out") $(head -n 1 "$T/ref.out")" "$(echo $(cat "$T/early2.out"))" "early2's and its child's outputs"

# ---- exact calls per process and function; exact nesting ----------------------------------------
"$ATF" verify "$T/s" >/dev/null || fail "verify the session"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
assert_eq "processes 4" "$(head -n 1 "$T/stats")" "process directories"
calls_of() {    # name function
	awk -v p="${PID[$1]}" -v f="$2" '$1 == "call" && $2 == p && $3 == f { print $4 }' "$T/stats"
}
declare -A WAVES=([early1]=4 [early2]=1 [late]=2 [child]=1)
for n in early1 early2 late child; do
	w=${WAVES[$n]}
	assert_eq "$((w * N)) $((2 * w * N)) $((w * N))" "$(calls_of "$n" wv_outer) $(calls_of "$n" wv_mov) $(calls_of "$n" wv_lea)" \
		"$n: calls of wv_outer, wv_mov, wv_lea"
	assert_eq "0 signal" "$(awk -v p="${PID[$n]}" '$1 == "process" && $2 == p { print $16, $18 }' "$T/stats")" "$n: lost, and its end"
	assert_eq 0 "$(awk -v p="${PID[$n]}" '$1 == "unbalanced" && $2 == p { print $3 }' "$T/stats")" "$n: unbalanced frames"
	# every wv_outer at depth 0 with its three calls under it, in order, and nothing else
	"$ATF" dump "$T/s/pid_${PID[$n]}" | grep -v '^#' | sed 's/^[^|]*| //' >"$T/$n.tree"
	for _ in $(seq $((w * N))); do
		printf 'wv_outer() {\n  wv_mov();\n  wv_mov();\n  wv_lea();\n} /* wv_outer */\n'
	done >"$T/want.tree"
	diff -q "$T/want.tree" "$T/$n.tree" >/dev/null || fail "$n: calls nest otherwise: $(diff "$T/want.tree" "$T/$n.tree" | head -6)"
done
echo "ok: record -a --call-sites: 3 processes redirected (2 at the start, 1 at its first call) and a child through its parent's stubs, exact calls and nesting, text restored"
