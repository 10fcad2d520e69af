#!/usr/bin/env bash
# record --call-sites across modules (user/patch/callsite_xmod.c) and in modules mapped later:
#   - csmods, a stripped program (no .symtab: its functions come from .eh_frame), calls
#     libcsplt.so's pl_outer through its own PLT (-z now): that site is redirected to a stub near
#     the program, which jumps to pl_outer's body in libcsplt's memfd; libcsplt's own 4 PLT
#     sites as before;
#   - libcsdl.so, mapped with dlopen while the session runs: its 3 direct calls are redirected
#     once ld.so announces it;
#   - exact calls per function, the same as with plain probes (--no-trampolines), the output the
#     untraced run's, and the share of calls through the stubs (bench/call_sites_share.py);
#   - csmods_lazy (-z lazy): its PLT slot is not bound at launch (left out), then redirected at
#     the next change of ld.so's list (the dlopen) since the first round bound it;
#   - a -p session killed with -9 after the dlopen: the text of all three modules differs from
#     the file's during it, and `atftrace restore -p` makes each byte-identical to its file;
#   - bpftrace on pl_outer, which only the program calls (its one PLT site, a stub near the
#     program): the hand-back writes that other module's site back, so bpftrace counts a round
#     exactly, and the program's text is its file's again.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
P=$TARGETS/csmods
PL=$TARGETS/csmods_lazy
LIB=$TARGETS/libcsplt.so
DL=$TARGETS/libcsdl.so
[ -x "$P" ] && [ -x "$PL" ] && [ -f "$DL" ] || fail "build first: make OUTPUT=$OUTPUT targets"
command -v bpftool >/dev/null || fail "bpftool missing (a build dependency)"
N=300
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SPEC=(-f 'libcsplt.so:*' -f 'libcsdl.so:*')
SPEC_LAZY=(-f 'libcspltlazy.so:*' -f 'libcsdl.so:*')
line() { printf 'atftrace record: %s%s: %s redirected \\(%s' "$1" "$2" "$3" "$4"; }

# counts SESSION: "function calls" per line, sorted
counts() { "$ATF" report "$1" | awk 'NR > 2 { print $13, $5 }' | sort; }

printf '%d\nload\n%d\n' $N $N >"$T/in"
"$P" - <"$T/in" >"$T/plain.out" || fail "the untraced run failed"
grep -qx loaded "$T/plain.out" || fail "the untraced run did not load libcsdl.so"

# ---- launched: the program's PLT call, the library's own, the dlopen'd library's ----------------
"$ATF" record --call-sites -v -o "$T/cs" "${SPEC[@]}" -- "$P" - <"$T/in" >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's: $(diff "$T/plain.out" "$T/cs.out" | head -5)"
assert_contains "$T/cs.err" "$(line "$P" " \\(its calls into the traced modules\\)" "1 call site of 1 function" "0 direct, 1 through the PLT; 0 left out")" \
	"the stripped program's call of pl_outer@plt"
assert_contains "$T/cs.err" "$(line "$LIB" "" "4 call sites of 3 functions" "0 direct, 4 through the PLT; 0 left out")" \
	"libcsplt's own PLT calls"
assert_contains "$T/cs.err" "$(line "$DL" "" "3 call sites of 2 functions" "3 direct, 0 through the PLT; 0 left out")" \
	"libcsdl's direct calls, mapped after the session started"
"$ATF" record --no-trampolines -o "$T/np" "${SPEC[@]}" -- "$P" - <"$T/in" >/dev/null 2>"$T/np.err" \
	|| { cat "$T/np.err" >&2; fail "record --no-trampolines failed"; }
counts "$T/cs" >"$T/cs.calls"
counts "$T/np" >"$T/np.calls"
diff "$T/np.calls" "$T/cs.calls" >&2 || fail "calls per function differ between --call-sites and plain probes"
assert_eq "dl_leaf $((2 * N)) dl_mid $N dl_outer $N pl_leaf $((4 * N)) pl_mid $((4 * N)) pl_outer $((2 * N)) pl_swap $((2 * N))" \
	"$(xargs <"$T/cs.calls")" "calls per function"

# ---- the share of calls through the stubs: every call but dl_outer's (through a pointer) --------
printf '%d\nload\n%d\nMARK\n' $N $N >"$T/work"
share=$(python3 "$ROOT/bench/call_sites_share.py" "$ATF" "$T/sh" "$T/work" "${SPEC[@]}" -- "$P" -) \
	|| fail "call_sites_share.py failed: $share"
assert_eq "stub_calls $((6 * 2 * N + 3 * N)) calls $((6 * 2 * N + 4 * N)) lost 0" \
	"$(echo "$share" | awk '{ print $3, $4, $5, $6, $7, $8 }')" "calls through the stubs and calls recorded"

# ---- lazily bound: the program's slot is bound by the first round, redirected at the dlopen -----
"$PL" - <"$T/in" >"$T/lplain.out" || fail "the untraced lazy run failed"
"$ATF" record --call-sites -v -o "$T/lz" "${SPEC_LAZY[@]}" -- "$PL" - <"$T/in" >"$T/lz.out" 2>"$T/lz.err" \
	|| { cat "$T/lz.err" >&2; fail "record --call-sites of the lazy program failed"; }
cmp -s "$T/lplain.out" "$T/lz.out" || fail "lazy: the output differs from the untraced run's"
assert_contains "$T/lz.err" "$(line "$PL" " \\(its calls into the traced modules\\)" "0 call sites of 0 functions" "0 direct, 0 through the PLT; 1 left out: .* 1 PLT slots not bound yet")" \
	"lazy: the program's slot not bound at launch"
assert_contains "$T/lz.err" "$(line "$PL" " \\(its calls into the traced modules\\)" "1 call site of 1 function" "0 direct, 1 through the PLT; 0 left out")" \
	"lazy: the program's call redirected once bound (at the dlopen)"
"$ATF" record --no-trampolines -o "$T/lnp" "${SPEC_LAZY[@]}" -- "$PL" - <"$T/in" >/dev/null 2>"$T/lnp.err" \
	|| { cat "$T/lnp.err" >&2; fail "record --no-trampolines of the lazy program failed"; }
counts "$T/lz" >"$T/lz.calls"
counts "$T/lnp" >"$T/lnp.calls"
diff "$T/lnp.calls" "$T/lz.calls" >&2 || fail "lazy: calls per function differ between --call-sites and plain probes"

# ---- -p, kill -9 after the dlopen, then atftrace restore: every module the file's again ---------
printf '10\nload\n10\n10\n' | "$P" - >"$T/p.plain" || fail "the untraced -p script failed"
mkfifo "$T/pin" "$T/pout" "$T/ready"
"$P" - <"$T/pin" >"$T/pout" &
target=$!
exec 5>"$T/pin" 6<"$T/pout"
echo 10 >&5
read -r -t 60 -u 6 r1 || fail "the target never finished its first round"
"$ATF" record --call-sites -v -p $target -o "$T/p" "${SPEC[@]}" --ready-file "$T/ready" 2>"$T/p.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/p.err" >&2; fail "record -p never became ready"; }
echo load >&5
read -r -t 60 -u 6 r2 || fail "the target never loaded libcsdl.so"
echo 10 >&5
read -r -t 60 -u 6 r3 || fail "the target never finished its second round"
for f in "$P" "$LIB" "$DL"; do
	[ "$(text_diff $target "$f")" -gt 0 ] || { cat "$T/p.err" >&2; fail "no redirected call in $f's text during the session"; }
done
kill -9 $rec
wait $rec 2>/dev/null || true
"$ATF" restore -p $target >"$T/restore.out" 2>&1 || { cat "$T/restore.out" >&2; fail "restore -p failed"; }
for f in "$P" "$LIB" "$DL"; do
	assert_eq 0 "$(text_diff $target "$f")" "bytes of $f's text that differ from the file after restore"
done
echo 10 >&5
read -r -t 60 -u 6 r4 || fail "the target never finished its round after restore"
exec 5>&-
wait $target || fail "the -p target failed"
exec 6<&-
assert_eq "$(xargs <"$T/p.plain")" "$r1 $r2 $r3 $r4" "the -p target's output"

# ---- hand-back of a function that only another module's site calls ----------------------------
need_tracefs
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
mkfifo "$T/hin" "$T/hout" "$T/hready"
"$P" - <"$T/hin" >"$T/hout" &
target=$!
exec 5>"$T/hin" 6<"$T/hout"
echo 10 >&5
read -r -t 60 -u 6 h1 || fail "hand-back: the target never finished its first round"
"$ATF" record --call-sites -p $target -o "$T/h" "${SPEC[@]}" --ready-file "$T/hready" 2>"$T/h.err" 5>&- 6<&- &
rec=$!
timeout 60 cat "$T/hready" >/dev/null || { cat "$T/h.err" >&2; fail "hand-back: record -p never became ready"; }
[ "$(text_diff $target "$P")" -gt 0 ] || { cat "$T/h.err" >&2; fail "hand-back: the program's call is not redirected"; }
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$LIB:pl_outer { @n = count(); }" >"$T/h.bt" 2>&1 5>&- 6<&- &
bt=$!
wait_for "$T/h.bt" "^ready$" "hand-back: bpftrace attached"
wait_for "$T/h.err" "^atftrace record: pl_outer \\(libcsplt.so\\) handed back: another tool registered a uprobe on it; 1 of its 1 redirected call site written back" \
	"hand-back: pl_outer handed back with the program's site"
assert_eq 0 "$(text_diff $target "$P")" "bytes of the program's text that differ from the file after the hand-back"
echo 10 >&5
read -r -t 60 -u 6 h2 || fail "hand-back: the target never finished its round under bpftrace"
stop_bpftrace $bt
assert_eq 10 "$(awk '/^@n:/ { print $2 }' "$T/h.bt")" "hand-back: bpftrace's count of pl_outer in a round of 10"
exec 5>&-
wait $target || fail "hand-back: the target failed"
exec 6<&-
wait $rec || { cat "$T/h.err" >&2; fail "hand-back: record --call-sites -p"; }
assert_eq "10 10" "$("$ATF" report --csv "$T/h" | awk -F, '$1 == "\"pl_outer\"" { o = $2 } $1 == "\"pl_swap\"" { w = $2 } END { print o + 0, w + 0 }')" \
	"hand-back: the session's pl_outer and pl_swap calls (the round under bpftrace; the first is before it)"
echo "ok: --call-sites across modules: the program's PLT call and a dlopen'd library's calls; $share"
