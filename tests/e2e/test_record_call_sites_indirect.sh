#!/usr/bin/env bash
# record --call-sites redirects indirect call sites (user/patch/callsite_ind.c): a `call *mem` of
# at least 5 bytes in a traced module jumps to a stub that looks the target up in the module's
# table of traced entries. On tests/targets/cs_indirect (the forms checked with objdump first):
#   - the -v line: 3 indirect sites redirected (via_disp32, via_rip, in_rec); the two shorter
#     ones (via_reg, via_small) not, nor _start's call of libc's __libc_start_main through a
#     GOT slot of a symbol the program does not define (it can never be in its table);
#   - exact calls and parents, the same as with plain probes (--no-trampolines), traced and
#     untraced targets through the same sites; the target's output is the untraced run's;
#   - in_rec recursing 200 deep through a pointer: no frame ends as unwound (plain probes: the
#     kernel's 64 pending uretprobes per thread end the deeper ones as unwound);
#   - record -p: the text differs from the file during the session, is the file's after it;
#   - the recorder killed with -9: the indirect sites stay redirected (the target runs on
#     through the stubs), `atftrace restore -p` writes them back byte for byte;
#   - bpftrace on in_mov (called through pointers only) hands it back: its key in the table
#     becomes a miss, and bpftrace and the session both count exactly its calls.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
CI=$(realpath "$TARGETS/cs_indirect")
[ -x "$CI" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/atf_raw" ] || fail "build first: make OUTPUT=$OUTPUT tools"
N=300

# the forms the test is about, as the compiler emitted them
objdump -d "$CI" >"$T/dis"
for form in '<via_disp32>:.*ff 90 88 00 00 00[[:space:]]+call[[:space:]]+\*0x88\(%r' '<via_rip>:.*ff 15 .*call[[:space:]]+\*0x[0-9a-f]+\(%rip\) .*<g_ptr>' \
	    '<in_rec>:.*ff 15 .*call[[:space:]]+\*0x[0-9a-f]+\(%rip\) .*<g_big\+0x90>' '<via_reg>:.*ff d0[[:space:]]+call[[:space:]]+\*%rax' \
	    '<via_small>:.*ff 50 08[[:space:]]+call[[:space:]]+\*0x8\(%rax\)'; do
	awk '/^[0-9a-f]+ </ { f = $2 } /call +\*/ { print f, $0 }' "$T/dis" | grep -qE "$form" \
		|| fail "the compiler did not emit $form"
done

"$CI" all $N >"$T/plain.out" || fail "the untraced run failed"

# ---- call sites against plain probes ---------------------------------------------------------
"$ATF" record --call-sites -v -o "$T/cs" -f 'in_*' -f 'via_*' -- "$CI" all $N >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
assert_contains "$T/cs.err" "cs_indirect: 3 indirect call sites redirected, [1-9][0-9]* functions in the lookup table \(0 left out: 0 with a thread inside, 0 not the file's bytes, 0 out of reach; not redirected: 2 shorter than a jmp, 1 through another module's GOT slot\)" \
	"the indirect sites of via_disp32, via_rip and in_rec"
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's: $(diff "$T/plain.out" "$T/cs.out" | head -5)"
"$ATF" verify "$T/cs" >/dev/null || fail "verify --call-sites session"
"$ATF" record --no-trampolines -o "$T/plain" -f 'in_*' -f 'via_*' -- "$CI" all $N >"$T/p.out" 2>"$T/p.err" \
	|| { cat "$T/p.err" >&2; fail "record --no-trampolines failed"; }
call_summary "$T/cs" >"$T/cs.sum"
call_summary "$T/plain" >"$T/plain.sum"
assert_eq 0 "$(awk '$1 == "unwound" { print $2 }' "$T/cs.sum")" "frames closed as unwound with --call-sites"
unw=$(awk '$1 == "unwound" { print $2 }' "$T/plain.sum")
[ "$unw" -ge 100 ] || fail "plain probes: expected the frames of in_rec past 64 to end as unwound, got $unw"
grep -v '^unwound' "$T/cs.sum" >"$T/cs.cmp"
grep -v '^unwound' "$T/plain.sum" >"$T/plain.cmp"
diff "$T/plain.cmp" "$T/cs.cmp" >&2 || fail "calls or parents differ between --call-sites and plain probes"
# the numbers themselves: per round 3 via_disp32, 2 via_rip, 1 via_reg, 1 via_small, 2 in_mov,
# 3 in_sub; in_rec(200) every 10th round: 201 calls each
NREC=$(( (N + 9) / 10 ))
assert_eq "$((3 * N)) $((2 * N)) $N $N $((2 * N)) $((3 * N)) $((201 * NREC))" "$("$ATF" report "$T/cs" | awk '
	{ c[$13] = $5 } END { print c["via_disp32"], c["via_rip"], c["via_reg"], c["via_small"],
	c["in_mov"], c["in_sub"], c["in_rec"] }')" "calls of via_disp32 via_rip via_reg via_small in_mov in_sub in_rec"
# in_rec nests 201 deep under itself: depth 200 holds NREC calls
assert_eq "$NREC" "$(for d in "$T"/cs/pid_*/thread_*; do "$TOOLS/atf_raw" "$d"; done |
	awk '$1 == "ev" && $3 == "C" && $5 == 200 { n++ } END { print n + 0 }')" "calls at depth 200"

# ---- record -p: the text is the file's after the session -----------------------------------------
mkfifo "$T/ready" "$T/ready2"
"$CI" serve "$T/served" >"$T/serve.out" &
target=$!
wait_file() { timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.01; done' _ "$1" || fail "$2"; }
wait_file "$T/served" "the serving target never became ready"
"$ATF" record --call-sites -v -p $target -o "$T/s" -f 'in_*' -f 'via_*' --ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p --call-sites never became ready"; }
assert_contains "$T/s.err" "cs_indirect: 3 indirect call sites redirected" "record -p: the indirect sites"
during=$(text_diff $target "$CI")
[ "$during" -gt 0 ] || fail "no redirected call in the text during the session"
kill -INT $rec
wait $rec || { cat "$T/s.err" >&2; fail "record -p --call-sites failed"; }
assert_eq 0 "$(text_diff $target "$CI")" "bytes of the text that differ from the file after the session"
"$ATF" verify "$T/s" >/dev/null || fail "verify the -p session"

# ---- kill -9: the sites stay redirected; restore -p writes them back --------------------------------
"$ATF" record --call-sites -v -p $target -o "$T/k" -f 'in_*' -f 'via_*' --ready-file "$T/ready2" 2>"$T/k.err" &
rec=$!
timeout 60 cat "$T/ready2" >/dev/null || { cat "$T/k.err" >&2; fail "record -p --call-sites (to kill) never became ready"; }
kill -KILL $rec
rc=0; wait $rec || rc=$?
assert_eq 137 $rc "the killed recorder's status"
killed=$(text_diff $target "$CI" int3)
[ "$killed" -ge 3 ] || fail "after kill -9: only $killed bytes of the text differ from the file"
"$ATF" restore -p $target --dry-run >"$T/dry.out" 2>&1 || { cat "$T/dry.out" >&2; fail "restore --dry-run"; }
assert_eq 3 "$(grep -cE "^would write ff ([0-9a-f]{2} ){4}[0-9a-f]{2} at 0x[0-9a-f]+ \(.*cs_indirect\+0x[0-9a-f]+\) over e9( [0-9a-f]{2}){4} cc$" "$T/dry.out")" \
	"--dry-run: the three indirect calls, ours (jmp, int3) then the file's"
"$ATF" restore -p $target >"$T/restore.out" 2>&1 || { cat "$T/restore.out" >&2; fail "restore -p"; }
assert_eq 0 "$(text_diff $target "$CI")" "bytes of the text that differ from the file after restore -p"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"
assert_contains "$T/serve.out" "^served [1-9][0-9]*$" "the served target's count"

# ---- hand-back: bpftrace on in_mov, reached only through pointers -----------------------------------
if command -v bpftrace >/dev/null; then
	K=500
	mkfifo "$T/hb.ready"
	"$ATF" record --call-sites -v -o "$T/hb" -f 'in_*' -f 'via_*' --ready-file "$T/hb.ready" \
		-- "$CI" gate "$T/go" $K >"$T/hb.out" 2>"$T/hb.err" &
	rec=$!
	timeout 60 cat "$T/hb.ready" >/dev/null || { cat "$T/hb.err" >&2; fail "hb: record never became ready"; }
	# BEGIN runs once every probe is attached
	bpftrace -e "BEGIN { printf(\"attached\\n\"); } uprobe:$CI:in_mov { @n = count(); }" >"$T/bt.out" 2>&1 &
	bt=$!
	wait_for "$T/bt.out" "^attached$" "bpftrace attached"
	wait_for "$T/hb.err" "^atftrace record: in_mov \(cs_indirect\) handed back: another tool registered a uprobe on it; 1 of its 1 redirected call site written back" \
		"in_mov handed back to bpftrace"
	touch "$T/go"
	wait $rec || { cat "$T/hb.err" >&2; fail "hb: record failed"; }
	assert_contains "$T/hb.out" "^gate $K$" "the gated rounds ran"
	stop_bpftrace $bt
	assert_contains "$T/bt.out" "^@n: $((2 * K))$" "bpftrace's count of in_mov (through the table's tombstone)"
	assert_eq "$((2 * K))" "$("$ATF" report "$T/hb" | awk '$13 == "in_mov" { print $5 }')" "the session's calls of in_mov"
	assert_eq "$((3 * K))" "$("$ATF" report "$T/hb" | awk '$13 == "in_sub" { print $5 }')" "the session's calls of in_sub (still redirected)"
fi
echo "ok: --call-sites indirect sites: exact counts and parents, no unwound frame at depth 200 ($unw with plain probes), text restored, killed session restored, hand-back"
