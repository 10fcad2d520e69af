#!/usr/bin/env bash
# atftrace restore -p PID (user/cmd/cmd_restore.c, user/probe/trampoline_restore.c): the jmps that
# a recorder killed with -9 left over function entries (tests/targets/tramp_sites: functions
# that start with mov/lea/sub) are written back from each trampoline area's own header:
#   - refused while the session runs (the text stays patched);
#   - after kill -9: the jmps are still there, a new session says so and how to undo it;
#   - --dry-run lists each write and writes nothing;
#   - restore: the text is byte for byte the file's (through /proc/PID/mem); again: nothing to do;
#   - bpftrace on a formerly patched function: the target lives, bpftrace counts exactly;
#   - a new record -p patches again and counts exactly;
#   - a session that ends while strace holds the target cannot restore it (EPERM): restore is
#     refused while strace holds it too, and works once strace is gone.
#   - a damaged header (its CRC overwritten through /proc/PID/mem) is refused, nothing written;
#     every other kind of damage is the unit test's (tests/unit/test_patch_log.c).
source "$(dirname "$0")/lib.sh"
need_bpf
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
command -v strace >/dev/null || fail "strace is missing (scripts/deps.sh installs it)"
kill_on_exit
TS=$TARGETS/tramp_sites
[ -x "$TS" ] || fail "build first: make OUTPUT=$OUTPUT targets"
N=1000

# the target answers "round N ok" once it called every function N times
mkfifo "$T/in" "$T/out" "$T/ready1" "$T/ready3" "$T/ready4"
"$TS" rounds <"$T/in" >"$T/out" &
target=$!
exec 3>"$T/in" 4<"$T/out"
read -r -t 60 -u 4 line || fail "tramp_sites rounds did not start"
assert_eq ready "$line" "the target starts"
round() {   # N: one round of N calls of each function, answered ok
	local reply
	echo "$1" >&3
	read -r -t 120 -u 4 reply || fail "no answer from the target for round $1"
	assert_eq "round $1 ok" "$reply" "round $1"
}
calls() { awk -v f="$2" '$1 == "call" && $3 == f { print $4 }' "$1"; }

# ---- nothing to restore in a process never patched ---------------------------------------------
"$ATF" restore -p $target >"$T/none.out" 2>&1 || { cat "$T/none.out" >&2; fail "restore of an unpatched process"; }
assert_contains "$T/none.out" "^process $target has no atftrace trampolines or call-site stubs: nothing to restore$" "nothing to restore"

# ---- a session patches the target; restore is refused while it runs ---------------------------
"$ATF" record --trampolines -v -p $target -o "$T/s1" -f 'tr_*' -x tr_nop5 --ready-file "$T/ready1" 2>"$T/s1.err" &
rec=$!
timeout 60 cat "$T/ready1" >/dev/null || { cat "$T/s1.err" >&2; fail "record -p never became ready"; }
npatched=$(sed -n 's/.*tramp_sites: \([0-9]*\) functions\? through trampolines.*/\1/p' "$T/s1.err")
[ "${npatched:-0}" -ge 6 ] || fail "the session patched only ${npatched:-no} functions"
diff1=$(text_diff $target "$TS")
[ "$diff1" -ge $((4 * npatched)) ] || fail "text while recording: only $diff1 bytes differ from the file"
rc=0; "$ATF" restore -p $target >"$T/alive.out" 2>"$T/alive.err" || rc=$?
assert_eq 1 $rc "restore while the session runs: exit status"
assert_contains "$T/alive.err" "^atftrace restore: process $target: its trampolines or call-site stubs \(.*tramp_sites\) belong to a running atftrace session \(process $rec\)" "restore refused while the session runs"
assert_eq 1 "$(wc -l <"$T/alive.err")" "one line"
assert_eq "$diff1" "$(text_diff $target "$TS")" "text after the refused restore"

# ---- the recorder is killed while the target runs through its trampolines ----------------------
echo 20000 >&3
kill -KILL $rec
rc=0; wait $rec || rc=$?
assert_eq 137 $rc "the recorder's status"
read -r -t 120 -u 4 line || fail "no answer from the target after the recorder was killed"
assert_eq "round 20000 ok" "$line" "the target ran on through the trampolines"
# the plain probes' int3s went with the recorder; the jmps stay
diff2=$(text_diff $target "$TS")
[ "$diff2" -ge $((4 * npatched)) ] || fail "text after kill -9: only $diff2 bytes differ from the file"

# ---- a new session says what is left, and how to undo it --------------------------------------
"$ATF" record --trampolines -p $target -o "$T/s2" -f 'tr_*' -x tr_nop5 --duration 0.3 2>"$T/s2.err" \
	|| { cat "$T/s2.err" >&2; fail "a session on the unrestored process"; }
assert_contains "$T/s2.err" "^atftrace record: process $target still has $npatched function entries patched by an atftrace session that ended without restoring them \(killed\?\): not traced; 'atftrace restore -p $target' writes their original bytes back$" "the new session names the leftovers"
assert_eq "$diff2" "$(text_diff $target "$TS")" "text after the second session"

# ---- --dry-run ------------------------------------------------------------------------------------
"$ATF" restore -p $target --dry-run >"$T/dry.out" 2>"$T/dry.err" || { cat "$T/dry.err" >&2; fail "restore --dry-run"; }
assert_eq "$npatched" "$(grep -cE "^would write ([0-9a-f]{2} ){4}[0-9a-f]{2} at 0x[0-9a-f]+ \(.*tramp_sites\+0x[0-9a-f]+\) over e9( [0-9a-f]{2}){4}$" "$T/dry.out")" "--dry-run: one write per patch"
assert_contains "$T/dry.out" "tramp_sites: would restore $npatched of $npatched patches$" "--dry-run summary"
assert_eq "$diff2" "$(text_diff $target "$TS")" "text after --dry-run"

# ---- a damaged header is refused, nothing written -------------------------------------------------
# (the area is read-only in the target: /proc/PID/mem writes the target's private copy of the page,
# as a debugger's write would; its CRC field gets other bytes, then its own back)
area=$(awk '/memfd:atftrace-trampolines/ && $3 == "00000000" { split($1, a, "-"); print a[1]; exit }' /proc/$target/maps)
[ -n "$area" ] || fail "no trampoline area in the target"
poke_crc() {    # AREA-HEX HEX-BYTES: write them over the CRC field (offset 24) of the area's header; print what was there
	python3 - "$target" "$1" "$2" <<'PY'
import sys
pid, addr, data = sys.argv[1], int(sys.argv[2], 16) + 24, bytes.fromhex(sys.argv[3])
with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
    mem.seek(addr); old = mem.read(len(data)); mem.seek(addr); mem.write(data)
print(old.hex())
PY
}
crc=$(poke_crc "$area" deadbeef)
rc=0; "$ATF" restore -p $target >"$T/bad.out" 2>"$T/bad.err" || rc=$?
assert_eq 1 $rc "restore of a damaged header: exit status"
assert_eq "atftrace restore: process $target: trampoline area at 0x$area: checksum mismatch (damaged header): nothing written" "$(cat "$T/bad.err")" "a damaged header is refused"
assert_eq "$diff2" "$(text_diff $target "$TS")" "text after the refused restore of a damaged header"
assert_eq deadbeef "$(poke_crc "$area" "$crc")" "the header's own CRC put back"

# ---- restore ----------------------------------------------------------------------------------------
"$ATF" restore -p $target >"$T/r.out" 2>"$T/r.err" || { cat "$T/r.out" "$T/r.err" >&2; fail "restore"; }
assert_eq "$(realpath "$TS"): restored $npatched of $npatched patches" "$(cat "$T/r.out")" "restore's line"
assert_eq 0 "$(text_diff $target "$TS")" "text after restore: the file's"
round $N
"$ATF" restore -p $target >"$T/r2.out" 2>&1 || { cat "$T/r2.out" >&2; fail "restore again"; }
assert_contains "$T/r2.out" "tramp_sites: restored 0 of $npatched patches \($npatched already original\)$" "a second restore has nothing to do"

# ---- bpftrace on a formerly patched function: the target lives, the count is exact ----------------
need_tracefs
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$TS:tr_sub { @calls = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace attached"
round $N
stop_bpftrace $bt
kill -0 $target || fail "the target died under bpftrace"
assert_contains "$T/bt.out" "^@calls: $N$" "bpftrace counts every tr_sub call"

# ---- a new session after restore patches again and counts exactly -----------------------------
"$ATF" record --trampolines -v -p $target -o "$T/s3" -f 'tr_*' -x tr_nop5 --ready-file "$T/ready3" 2>"$T/s3.err" &
rec=$!
timeout 60 cat "$T/ready3" >/dev/null || { cat "$T/s3.err" >&2; fail "record -p after restore never became ready"; }
round $N
kill -INT $rec
wait $rec || { cat "$T/s3.err" >&2; fail "record -p after restore"; }
assert_contains "$T/s3.err" "tramp_sites: $npatched functions through trampolines" "patched again after restore"
if grep -q "still has" "$T/s3.err"; then fail "leftovers reported after restore"; fi
"$ATF" verify "$T/s3" >/dev/null || fail "verify after restore"
"$TOOLS/record_stats" "$T/s3" >"$T/s3.stats"
for f in tr_lea tr_mov tr_sub tr_rip tr_endbr tr_short tr_loop; do
	assert_eq $N "$(calls "$T/s3.stats" $f)" "calls of $f after restore"
done
assert_eq $((2 * N)) "$(calls "$T/s3.stats" tr_jcc)" "calls of tr_jcc after restore"
assert_eq 0 "$(text_diff $target "$TS")" "text after the session that followed restore"

# ---- a session that ends while strace holds the target -------------------------------------------
"$ATF" record --trampolines -v -p $target -o "$T/s4" -f 'tr_*' -x tr_nop5 --ready-file "$T/ready4" 2>"$T/s4.err" &
rec=$!
timeout 60 cat "$T/ready4" >/dev/null || { cat "$T/s4.err" >&2; fail "record -p (strace) never became ready"; }
strace -p $target -e trace=none -o /dev/null 2>"$T/strace.err" &
st=$!
timeout 60 bash -c 'until [ "$(awk "\$1 == \"TracerPid:\" { print \$2 }" /proc/$1/status)" = "$2" ]; do sleep 0.05; done' _ $target $st \
	|| fail "strace never attached"
kill -INT $rec
wait $rec || { cat "$T/s4.err" >&2; fail "record -p (strace)"; }
assert_contains "$T/s4.err" "^atftrace record: cannot write the target's original text back \(Operation not permitted\); it goes on correctly through the trampolines; 'atftrace restore -p $target' writes it back later$" "the session says how to restore later"
diff4=$(text_diff $target "$TS")
[ "$diff4" -ge $((4 * npatched)) ] || fail "the session restored a process that strace held ($diff4 bytes differ)"
rc=0; "$ATF" restore -p $target >"$T/st.out" 2>"$T/st.err" || rc=$?
assert_eq 1 $rc "restore while strace holds the target: exit status"
assert_contains "$T/st.err" "^atftrace restore: process $target: cannot stop it \(Operation not permitted; traced by another tool, a debugger\?\): nothing written$" "restore refused under strace"
assert_eq "$diff4" "$(text_diff $target "$TS")" "text after the refused restore"
kill -INT $st
wait $st || true
"$ATF" restore -p $target >"$T/r4.out" 2>"$T/r4.err" || { cat "$T/r4.out" "$T/r4.err" >&2; fail "restore after strace"; }
assert_contains "$T/r4.out" "tramp_sites: restored $npatched of $npatched patches$" "restore once strace is gone"
assert_eq 0 "$(text_diff $target "$TS")" "text after the last restore"
round $N

exec 3>&-
wait $target || fail "the target failed"
echo "ok"
