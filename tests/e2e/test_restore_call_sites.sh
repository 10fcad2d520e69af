#!/usr/bin/env bash
# atftrace restore -p PID after record --call-sites (user/patch/callsite.c logs every redirected
# call in its stubs' area, user/probe/trampoline_restore.c writes them back): four threads of
# tests/targets/callsites (rounds mode) call tr_sub and tr_mov directly, hot, the whole time:
#   - refused while the session runs (the text stays redirected);
#   - the recorder is killed with -9 while the threads run through the stubs: the redirected
#     calls stay; a new record -p, with or without --call-sites, says so in one line and does
#     not redirect them a second time (their bytes are not the file's);
#   - --dry-run lists one write per site (the whole call, ours then the file's) and writes nothing;
#   - restore: the text is byte for byte the file's (through /proc/PID/mem); again: nothing to do;
#   - bpftrace on tr_mov and tr_sub, formerly redirected, counts exactly the calls the target
#     counts itself (while they were redirected, it saw none of the direct ones);
#   - a new record -p --call-sites redirects again and records exact counts.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
kill_on_exit
CS=$TARGETS/callsites
[ -x "$CS" ] || fail "build first: make OUTPUT=$OUTPUT targets"
NT=4 N=1000

mkfifo "$T/in" "$T/out" "$T/tready" "$T/ready1" "$T/ready3"
"$CS" rounds $NT "$T/tready" <"$T/in" >"$T/out" &
target=$!
exec 3>"$T/in" 4<"$T/out"
timeout 60 cat "$T/tready" >/dev/null || fail "the target's threads never ran"
ask() {     # N: ask for one round of N calls per thread and function
	echo "$1" >&3
}
answer() {  # N: its answer, the calls the threads counted themselves
	local reply
	read -r -t 120 -u 4 reply || fail "no answer from the target for round $1"
	assert_eq "round $1: tr_sub $((NT * $1)) tr_mov $((2 * NT * $1))" "$reply" "round $1, as the target counted it"
}

# ---- a session redirects the target's calls; restore is refused while it runs -----------------
"$ATF" record --call-sites -v -p $target -o "$T/s1" -f 'tr_*' --ready-file "$T/ready1" 2>"$T/s1.err" &
rec=$!
timeout 60 cat "$T/ready1" >/dev/null || { cat "$T/s1.err" >&2; fail "record -p --call-sites never became ready"; }
nsites=$(sed -n 's/.*callsites: \([0-9]*\) call sites\? of [0-9]* functions\? redirected.*/\1/p' "$T/s1.err")
[ "${nsites:-0}" -ge 8 ] || { cat "$T/s1.err" >&2; fail "the session redirected only ${nsites:-no} call sites"; }
diff1=$(text_diff $target "$CS")
[ "$diff1" -gt 0 ] || fail "no byte of the text differs from the file while recording"
rc=0; "$ATF" restore -p $target >"$T/alive.out" 2>"$T/alive.err" || rc=$?
assert_eq 1 $rc "restore while the session runs: exit status"
assert_contains "$T/alive.err" "^atftrace restore: process $target: its trampolines or call-site stubs \(.*callsites\) belong to a running atftrace session \(process $rec\)" "restore refused while the session runs"
assert_eq 1 "$(wc -l <"$T/alive.err")" "one line"
assert_eq "$diff1" "$(text_diff $target "$CS")" "text after the refused restore"

# ---- the recorder is killed while the threads run through the stubs -----------------------------
ask 20000
kill -KILL $rec
rc=0; wait $rec || rc=$?
assert_eq 137 $rc "the recorder's status"
answer 20000
# the plain probes' int3s went with the recorder; the redirected calls stay
diff2=$(text_diff $target "$CS")
[ "$diff2" -ge "$nsites" ] || fail "text after kill -9: only $diff2 bytes differ from the file"

# ---- new sessions say what is left, and do not redirect it again -------------------------------
leftover="^atftrace record: process $target still has $nsites call sites redirected by an atftrace session that ended without restoring them \(killed\?\): not traced; 'atftrace restore -p $target' writes their original bytes back$"
"$ATF" record --call-sites -v -p $target -o "$T/s2" -f 'tr_*' --duration 0.3 2>"$T/s2.err" \
	|| { cat "$T/s2.err" >&2; fail "a --call-sites session on the unrestored process"; }
assert_contains "$T/s2.err" "$leftover" "the new --call-sites session names the leftovers"
assert_eq 1 "$(grep -c 'still has' "$T/s2.err")" "one line"
assert_contains "$T/s2.err" "callsites: 0 call sites of 0 functions redirected \(0 direct, 0 through the PLT; $nsites left out: 0 with a thread inside, $nsites not the file's bytes, 0 out of reach, 0 PLT slots not bound yet, 0 PLT slots bound elsewhere\)" "nothing redirected over the leftovers"
assert_eq "$diff2" "$(text_diff $target "$CS")" "text after the second --call-sites session"
"$ATF" record --trampolines -p $target -o "$T/s2e" -f 'tr_*' --duration 0.3 2>"$T/s2e.err" \
	|| { cat "$T/s2e.err" >&2; fail "an entry-trampoline session on the unrestored process"; }
assert_contains "$T/s2e.err" "$leftover" "the new entry-trampoline session names the leftovers"
assert_eq "$diff2" "$(text_diff $target "$CS")" "text after the entry-trampoline session"

# ---- --dry-run ------------------------------------------------------------------------------------
"$ATF" restore -p $target --dry-run >"$T/dry.out" 2>"$T/dry.err" || { cat "$T/dry.err" >&2; fail "restore --dry-run"; }
assert_eq "$nsites" "$(grep -cE "^would write e8( [0-9a-f]{2}){4} at 0x[0-9a-f]+ \(.*callsites\+0x[0-9a-f]+\) over e8( [0-9a-f]{2}){4}$" "$T/dry.out")" "--dry-run: one write of a whole call per site"
assert_eq "$nsites" "$(grep -c "^would write" "$T/dry.out")" "--dry-run: nothing else"
assert_eq "$nsites" "$(awk '/^would write/ { print $9 }' "$T/dry.out" | sort -u | wc -l)" "--dry-run: every site once"
assert_contains "$T/dry.out" "callsites: would restore $nsites of $nsites patches$" "--dry-run summary of the call sites"
assert_eq "$diff2" "$(text_diff $target "$CS")" "text after --dry-run"

# ---- restore ----------------------------------------------------------------------------------------
# (two areas: the call sites', and the entry-trampoline session's, which restored its own)
cs_path=$(realpath "$CS")
"$ATF" restore -p $target >"$T/r.out" 2>"$T/r.err" || { cat "$T/r.out" "$T/r.err" >&2; fail "restore"; }
assert_contains "$T/r.out" "^$cs_path: restored $nsites of $nsites patches$" "restore's line for the call sites"
assert_contains "$T/r.out" "^$cs_path: restored 0 of [1-9][0-9]* patches \([1-9][0-9]* already original: its session restored them\)$" "restore's line for the entry trampolines"
assert_eq 2 "$(wc -l <"$T/r.out")" "one line per area"
assert_eq 0 "$(text_diff $target "$CS")" "text after restore: the file's"
ask $N; answer $N
"$ATF" restore -p $target >"$T/r2.out" 2>&1 || { cat "$T/r2.out" >&2; fail "restore again"; }
assert_contains "$T/r2.out" "^$cs_path: restored 0 of $nsites patches \($nsites already original\)$" "a second restore has nothing to do"
assert_eq 2 "$(wc -l <"$T/r2.out")" "one line per area, again"

# ---- bpftrace on the formerly redirected functions: every call of the round, exactly ------------
need_tracefs
bpftrace -e "BEGIN { printf(\"ready\\n\"); }
	uprobe:$CS:tr_mark { @in[tid] = 1; } uprobe:$CS:tr_done { delete(@in[tid]); }
	uprobe:$CS:tr_mov /@in[tid]/ { @mov = count(); } uprobe:$CS:tr_sub /@in[tid]/ { @sub = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace attached"
ask $N; answer $N
stop_bpftrace $bt
kill -0 $target || fail "the target died under bpftrace"
assert_eq $((2 * NT * N)) "$(awk '/^@mov:/ { print $2 }' "$T/bt.out")" "bpftrace's count of tr_mov (direct and indirect)"
assert_eq $((NT * N)) "$(awk '/^@sub:/ { print $2 }' "$T/bt.out")" "bpftrace's count of tr_sub"

# ---- a new session after restore redirects again and counts exactly -----------------------------
"$ATF" record --call-sites -v -p $target -o "$T/s3" -f 'tr_*' --ready-file "$T/ready3" 2>"$T/s3.err" &
rec=$!
timeout 60 cat "$T/ready3" >/dev/null || { cat "$T/s3.err" >&2; fail "record -p --call-sites after restore never became ready"; }
ask $N; answer $N
kill -INT $rec
wait $rec || { cat "$T/s3.err" >&2; fail "record -p --call-sites after restore"; }
assert_contains "$T/s3.err" "callsites: [1-9][0-9]* call sites? of [1-9][0-9]* functions? redirected \([1-9][0-9]* direct, 0 through the PLT; 0 left out" "redirected again after restore"
if grep -q "still has" "$T/s3.err"; then fail "leftovers reported after restore"; fi
"$ATF" verify "$T/s3" >/dev/null || fail "verify after restore"
mark_window_counts "$T/s3" >"$T/s3.win"
assert_eq $NT "$(wc -l <"$T/s3.win")" "threads that reached the mark"
assert_eq $NT "$(awk -v n=$N '$2 == 1 && $3 == n && $4 == 2 * n' "$T/s3.win" | wc -l)" \
	"threads with exactly $N calls of tr_sub and $((2 * N)) of tr_mov in the round"
assert_eq 0 "$(text_diff $target "$CS")" "text after the session that followed restore"

exec 3>&-
wait $target || fail "the target failed"
echo "ok: $nsites call sites restored after a kill -9"
