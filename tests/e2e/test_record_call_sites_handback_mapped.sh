#!/usr/bin/env bash
# record --call-sites -p: a function of a traced library that another tool probed before the
# target mapped it is handed back at once when the library is mapped (dlopen) and its calls are
# redirected. csmods runs; the session traces libcsplt.so and libcsdl.so (by path: watched for
# hand-backs from the start, not mapped yet); bpftrace registers a uprobe on libcsdl's dl_leaf
# (a second bpftrace, on pl_swap, is handed back after that registration was noted). Then
# csmods maps libcsdl.so: its 3 direct calls are redirected with it and dl_leaf's 2 at once
# handed back (-v: "kept on their entry (handed back before)"), so bpftrace counts every call of
# dl_leaf in the next round: exactly 2N (redirected, they would enter past its first bytes,
# unseen); the session's own counts are exact.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
P=$TARGETS/csmods
LIB=$TARGETS/libcsplt.so
DL=$TARGETS/libcsdl.so
[ -x "$P" ] && [ -f "$DL" ] || fail "build first: make OUTPUT=$OUTPUT targets"
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
N=25

mkfifo "$T/in" "$T/out" "$T/ready"
"$P" - <"$T/in" >"$T/out" &
target=$!
exec 5>"$T/in" 6<"$T/out"
echo 10 >&5
read -r -t 60 -u 6 r1 || fail "the target never finished its first round"
"$ATF" record --call-sites -v -p $target -o "$T/s" -f 'libcsplt.so:*' -f "$DL:*" \
	--ready-file "$T/ready" 2>"$T/s.err" 5>&- 6<&- &
REC=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p never became ready"; }
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$DL:dl_leaf { @n = count(); }" >"$T/bt" 2>&1 5>&- 6<&- &
bt=$!
wait_for "$T/bt" "^ready$" "bpftrace attached to dl_leaf"
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$LIB:pl_swap { @n = count(); }" >"$T/bt2" 2>&1 5>&- 6<&- &
bt2=$!
wait_for "$T/bt2" "^ready$" "bpftrace attached to pl_swap"
wait_for "$T/s.err" "^atftrace record: pl_swap \\(libcsplt.so\\) handed back: another tool registered a uprobe on it" \
	"pl_swap handed back (dl_leaf's registration noted before)"
stop_bpftrace $bt2

echo load >&5
read -r -t 60 -u 6 r2 || fail "the target never loaded libcsdl.so"
assert_eq loaded "$r2" "the target's dlopen of libcsdl.so"
wait_for "$T/s.err" "^atftrace record: process $target mapped .*: 3 call sites redirected$" \
	"libcsdl's direct calls redirected with the module"
wait_for "$T/s.err" "^atftrace record: process $target: 1 function that another tool probes kept on their entry \\(handed back before\\)$" \
	"dl_leaf handed back at once in the module mapped later"
echo $N >&5
read -r -t 60 -u 6 r3 || fail "the target never finished its round after the dlopen"
stop_bpftrace $bt
assert_eq $((2 * N)) "$(awk '/^@n:/ { print $2 }' "$T/bt")" "bpftrace's count of dl_leaf in a round of $N"
exec 5>&-
wait $target || fail "the target failed"
exec 6<&-
wait $REC || { cat "$T/s.err" >&2; fail "record --call-sites -p"; }
assert_eq "$((2 * N)) $N $N" "$("$ATF" report --csv "$T/s" | awk -F, '$1 == "\"dl_leaf\"" { l = $2 } $1 == "\"dl_mid\"" { m = $2 } $1 == "\"dl_outer\"" { o = $2 } END { print l + 0, m + 0, o + 0 }')" \
	"the session's dl_leaf, dl_mid and dl_outer calls"
echo "ok: dl_leaf, probed by another tool before libcsdl.so was mapped, stays on its entry"
