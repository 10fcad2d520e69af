#!/usr/bin/env bash
# record --call-sites and the first-instruction classes (tests/targets/cs_insns: one function per
# class, each called once directly and once through a pointer per round, results checked):
#   - a rip-relative load and store, a short jcc within the moved bytes, a jmp to another
#     function's body (ci_into), and an EVEX (AVX-512) first instruction: their direct calls go
#     through stubs, which run the moved instructions relocated;
#   - branch-in (ci_target, entered 3 bytes in by ci_into; ci_loop, which loops back into its
#     own first bytes): redirected too: a stub's body moves only the first instruction and
#     nothing writes the function, so a branch into it still runs the file's bytes (entry
#     trampolines refuse them, list-functions says so);
#   - ci_evex's entry is never probed (the kernel's single-step would lose its result): its
#     direct calls are traced through stubs, its indirect calls are not seen.
# Asserted: the program's output is the untraced run's; exact calls per function; during a -p
# session, which call sites of the file hold our call and which the file's bytes; after it, the
# text is the file's and the target goes on with right results. On a CPU without AVX-512 the
# EVEX case alone is left out, said in one line.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
CI=$TARGETS/cs_insns
[ -x "$CI" ] || fail "build first: make OUTPUT=$OUTPUT targets"
N=300

"$CI" all $N >"$T/plain.out" || fail "the untraced run failed"
evex=$(awk '$1 == "evex" { print $2 }' "$T/plain.out")
[ "$evex" = yes ] || echo "this CPU has no AVX-512 (avx512vl, avx512bw): the EVEX case (ci_evex) is not run"

"$ATF" list-functions -f 'ci_*' "$CI" >"$T/list"
assert_contains "$T/list" " evex +trampoline +selected +ci_evex\$" "ci_evex: an EVEX first instruction"
for f in ci_target ci_loop; do
	assert_contains "$T/list" " probe:branch-in +selected +$f\$" "$f: branched into near its entry"
done
for f in ci_mov ci_rip ci_jcc ci_into; do
	assert_contains "$T/list" " trampoline +selected +$f\$" "$f: first instructions that can be moved"
done

# ---- a launched run: output and exact counts ---------------------------------------------------------
"$ATF" record --call-sites -v -o "$T/cs" -f 'ci_*' -- "$CI" all $N >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
if grep -q "the target" "$T/cs.err"; then fail "$(grep 'the target' "$T/cs.err")"; fi
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's: $(diff "$T/plain.out" "$T/cs.out" | head -5)"
# one direct site of each: ci_mov, ci_rip, ci_jcc, ci_into, ci_evex, ci_target, ci_loop
assert_contains "$T/cs.err" "cs_insns: 7 call sites of 7 functions redirected \(7 direct" \
	"the direct calls of the seven functions"
"$ATF" verify "$T/cs" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/cs" >"$T/cs.stats"
assert_eq "0 0 0" "$(awk '$1 == "process" { e += $12; l += $16 } $1 == "unbalanced" { u += $3 }
	END { print e + 0, l + 0, u + 0 }' "$T/cs.stats")" "exceptions lost unbalanced"
calls() { awk -v f="$1" '$1 == "call" && $3 == f { n += $4 } END { print n + 0 }' "$T/cs.stats"; }
# direct and indirect calls: 2N each (ci_into's jump into ci_target is not a call of ci_target)
for f in ci_mov ci_rip ci_jcc ci_target ci_into ci_loop; do
	assert_eq $((2 * N)) "$(calls $f)" "calls of $f"
done
# ci_evex: the N direct calls, through its stub; its own entry has no probe
[ "$evex" = yes ] && want=$N || want=0
assert_eq $want "$(calls ci_evex)" "calls of ci_evex (through its stub only)"

# ---- record -p: which call sites are redirected; the text after the session ----------------------------
# site_states PID: for each direct call of a ci_ function in the file, "NAME file|ours": whether
# PID's text at the call holds the file's bytes or another call (ours)
site_states() {
	objdump -d --no-show-raw-insn "$CI" | awk '$2 == "call" && $4 ~ /^<ci_[a-z]*>$/ {
		sub(":", "", $1); gsub(/[<>]/, "", $4); print $1, $4 }' >"$T/sites"
	python3 - "$1" "$CI" "$T/sites" <<'PY'
import os, subprocess, sys
pid, path, sites = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
segs = []
for l in subprocess.check_output(["readelf", "-lW", path], text=True).splitlines():
    a = l.split()
    if a[:1] == ["LOAD"]:
        segs.append((int(a[2], 16), int(a[1], 16), int(a[5], 16)))  # vaddr, offset, filesz
ino = os.stat(path).st_ino
maps = []
for l in open(f"/proc/{pid}/maps"):
    a = l.split()
    if len(a) >= 6 and int(a[4]) == ino:
        lo, hi = (int(x, 16) for x in a[0].split("-"))
        maps.append((lo, hi, int(a[2], 16)))
with open(f"/proc/{pid}/mem", "rb") as mem, open(path, "rb") as f:
    for line in open(sites):
        addr, name = line.split()
        addr = int(addr, 16)
        off = next(o + addr - v for v, o, n in segs if v <= addr < v + n)
        lo = next(lo + off - mo for lo, hi, mo in maps if mo <= off < mo + hi - lo)
        mem.seek(lo); f.seek(off)
        print(name, "file" if mem.read(5) == f.read(5) else "ours")
PY
}
"$CI" serve "$T/served" >"$T/serve.out" &
target=$!
timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.05; done' _ "$T/served" || fail "the serving target never became ready"
mkfifo "$T/ready"
"$ATF" record --call-sites -v -p $target -o "$T/s" -f 'ci_*' --ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p never became ready"; }
site_states $target | sort | uniq -c | awk '{ print $2, $3, $1 }' >"$T/states"
kill -INT $rec
wait $rec || { cat "$T/s.err" >&2; fail "record -p failed"; }
cat >"$T/want" <<'W'
ci_evex ours 1
ci_into ours 1
ci_jcc ours 1
ci_loop ours 1
ci_mov ours 1
ci_rip ours 1
ci_target ours 1
W
diff -u "$T/want" "$T/states" >&2 || fail "call sites redirected during the session (want: every class)"
assert_eq 0 "$(text_diff $target "$CI")" "bytes of the text that differ from the file after the session"
site_states $target | sort | uniq -c | awk '{ print $2, $3, $1 }' >"$T/after"
assert_eq 7 "$(grep -c ' file 1$' "$T/after")" "call sites with the file's bytes after the session"
"$ATF" verify "$T/s" >/dev/null || fail "verify the -p session"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"
assert_contains "$T/serve.out" "^served [1-9][0-9]* bad 0$" "the served target's results"
echo "ok: first-instruction classes through call sites: exact counts, branch-in redirected too, text restored"
