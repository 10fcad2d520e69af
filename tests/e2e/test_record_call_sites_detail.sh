#!/usr/bin/env bash
# record --call-sites: a call that enters its function through a stub is recorded with the
# registers, stack arguments, sp, lr and stack snapshot a plain probe sees (bpf/detail.bpf.h,
# struct probe_hit). On tests/targets/cs_detail, which calls libcsdetail.so's cd_f8 (eight
# integer arguments: the 7th and 8th on the stack) through its PLT, and in the library
# directly, through a pointer (`call *cd_ptr(%rip)`) and by a tail call (cd_tail8's `jmp`), and
# calls cd_chain8 directly, which reaches cd_leaf8 by two short tail calls that no stub takes:
#   - the -v lines: each of the four ways is redirected (a PLT stub in the program, a direct
#     stub, an indirect site, a tail call to its function's tail entry);
#   - --detail=always: every CALL's and RETURN's registers (gp[0..7], the stack-argument flag),
#     lr, fp, sp and snapshot size equal those of a --no-trampolines session of the same run,
#     exactly (address-space randomisation off, so sp and fp compare as they are); lr is the
#     return address in the program, checked as a module offset against the call sites in the
#     disassembly (the tail-called cd_f8's: its tail-caller's), also with plain probes, where
#     the tail-caller's uretprobe put its trampoline in the slot (and in the chain after a stub:
#     there cd_mid8's uretprobe returns into cd_chain8's stub); the snapshot's first word is lr;
#   - -A cd_f8@arg1/x,...,arg8/x -R cd_f8@retval/x, and --auto-args (cd_f8 is C, typed from
#     DWARF): dump prints the same calls with the same arguments as plain probes, and the ones the
#     target passed.
source "$(dirname "$0")/lib.sh"
need_bpf
[ "$(uname -m)" = x86_64 ] || skip "call-site stubs are x86_64's"
CD=$TARGETS/cs_detail LIB=$TARGETS/libcsdetail.so
[ -x "$CD" ] && [ -f "$LIB" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/detail_check" ] || fail "build first: make OUTPUT=$OUTPUT tools"
command -v setarch >/dev/null || fail "setarch (util-linux) is needed"
N=3
SEL=(-f 'libcsdetail.so:cd_*')

# ---- where each call returns to, as module offsets (from the disassembly) -----------------------
objdump -d "$CD" >"$T/prog.dis" && objdump -d "$LIB" >"$T/lib.dis" || fail "objdump"
# after_call DIS FUNC PATTERN: the hex offset of the instruction after FUNC's first line matching PATTERN
after_call() {
	awk -v fn="<$2>:" -v pat="$3" '
		index($0, fn) { in_fn = 1; next }
		in_fn && /^$/ { exit }
		in_fn && found { sub(/:$/, "", $1); print $1; exit }
		in_fn && $0 ~ pat { found = 1 }' "$1"
}
sym() { awk -v s="<$2>:" '$2 == s { print $1 }' "$1"; }
RET_PLT=$(after_call "$T/prog.dis" main 'call.*<cd_f8@plt>')
RET_RUN=$(after_call "$T/prog.dis" main 'call.*<cd_run@plt>')
RET_DIRECT=$(after_call "$T/lib.dis" cd_run 'e8 .*call.*<cd_f8>')
RET_PTR=$(after_call "$T/lib.dis" cd_run 'ff 15 .*call.*<cd_ptr>')
RET_TAIL=$(after_call "$T/lib.dis" cd_run 'e8 .*call.*<cd_tail8>')
RET_CHAIN=$(after_call "$T/lib.dis" cd_run 'e8 .*call.*<cd_chain8>')
for v in RET_PLT RET_RUN RET_DIRECT RET_PTR RET_TAIL RET_CHAIN; do
	[ -n "${!v}" ] || fail "no call site for $v in the disassembly"
done
grep -qE "e9 .*jmp +[0-9a-f]+ <cd_f8>" "$T/lib.dis" || fail "libcsdetail.so has no jmp cd_f8 (rel32)"
grep -qE "eb .*jmp +[0-9a-f]+ <cd_leaf8>" "$T/lib.dis" || fail "libcsdetail.so has no jmp cd_leaf8 (rel8)"
MAIN_VA=$(sym "$T/prog.dis" main) F8_VA=$(sym "$T/lib.dis" cd_f8)

# ---- the two sessions ---------------------------------------------------------------------------
record() {   # name, record options...
	local name=$1; shift
	setarch "$(uname -m)" -R "$ATF" record -o "$T/$name" "${SEL[@]}" "$@" -- "$CD" $N \
		>"$T/$name.out" 2>"$T/$name.err" || { cat "$T/$name.err" >&2; fail "record $name failed"; }
	"$ATF" verify "$T/$name" >/dev/null || fail "verify $name"
}
record cs --call-sites -v --detail=always
assert_contains "$T/cs.err" "cs_detail \(its calls into the traced modules\): 2 call sites of 2 functions redirected \(0 direct, 2 through the PLT; 0 left out" \
	"main's calls of cd_f8 and cd_run through the PLT"
assert_contains "$T/cs.err" "libcsdetail.so: 4 call sites of 3 functions redirected \(4 direct, 0 through the PLT; 0 left out" \
	"cd_run's calls of cd_f8, cd_tail8 and cd_chain8, and cd_tail8's tail call"
assert_contains "$T/cs.err" "libcsdetail.so: 1 of them tail call \(jmp or jcc\) in traced functions, to their functions' tail entries$" "the tail call"
assert_contains "$T/cs.err" "libcsdetail.so: 1 indirect call site redirected" "the call through cd_ptr"
record plain --no-trampolines --detail=always
cmp -s "$T/cs.out" "$T/plain.out" || fail "the target's output differs between the sessions"

# norm NAME: the detail records, lr as a module offset (prog+OFF, lib+OFF, or the raw address)
norm() {
	local main_rt f8_rt
	read -r _ main_rt _ f8_rt <"$T/$1.out"
	"$TOOLS/detail_check" "$T/$1" >"$T/$1.c" || fail "detail_check $1"
	awk -v pb=$((main_rt - 0x$MAIN_VA)) -v lb=$((f8_rt - 0x$F8_VA)) '
	function hex(s,   v, i) {
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	$1 == "reg" {
		lr = hex($11)
		if (lr >= lb && lr - lb < 1048576) where = sprintf("lib+%x", lr - lb)
		else if (lr >= pb && lr - pb < 1048576) where = sprintf("prog+%x", lr - pb)
		else where = $11
		print $4, $5, $6, $7, $8, $9, "lr", where, $12, $13, $14, $15, $16, $17 }' "$T/$1.c"
}
norm cs >"$T/cs.regs"
norm plain >"$T/plain.regs"
assert_eq $((18 * N)) "$(wc -l <"$T/cs.regs")" "detail records with --call-sites"
diff "$T/plain.regs" "$T/cs.regs" >&2 || fail "registers, lr, fp or sp differ between --call-sites and plain probes"

# the values themselves: round i's arguments are 0x1000 * i + 0xWJ (W the way, J the argument)
for s in cs plain; do
	for i in $(seq 0 $((N - 1))); do
		b=$((0x1000 * i))
		for way in 1:$RET_PLT:prog 2:$RET_DIRECT:lib 3:$RET_PTR:lib 4:$RET_TAIL:lib; do
			IFS=: read -r w ret mod <<<"$way"
			want=""
			for j in 1 2 3 4 5 6 7 8; do
				v=$((b + 0x$w$j + (w == 4 && j == 1 ? 0x100 : 0)))
				want+="${want:+,}$(printf %x $v)"
			done
			got=$(awk -v a1="${want%%,*}" '$1 == "C" && $2 == "cd_f8" && $6 ~ "^" a1 "," {
				print $4, $6, $8 }' "$T/$s.regs")
			assert_eq "1 $want $mod+$ret" "$got" "$s: round $i, cd_f8's CALL (way $w): flags, gp[0..7], lr"
		done
	done
	# the tail-caller's lr is its tail-callee's; cd_run's returns to main; RETURNs: the CALLs' lr
	assert_eq "$N lib+$RET_TAIL" "$(awk '$1 == "C" && $2 == "cd_tail8" { n++; l = $8 } END { print n, l }' "$T/$s.regs")" \
		"$s: cd_tail8's CALL lr"
	assert_eq "$N prog+$RET_RUN" "$(awk '$1 == "C" && $2 == "cd_run" { n++; l = $8 } END { print n, l }' "$T/$s.regs")" \
		"$s: cd_run's CALL lr"
	# the chain cd_chain8 -> cd_mid8 -> cd_leaf8: one return address, each with its arguments
	for i in $(seq 0 $((N - 1))); do
		b=$((0x1000 * i))
		for f in cd_chain8:0 cd_mid8:0x200 cd_leaf8:0x600; do
			IFS=: read -r fn add <<<"$f"
			want=$(printf %x $((b + 0x51 + add)))
			for j in 2 3 4 5 6 7 8; do want+=,$(printf %x $((b + 0x50 + j))); done
			assert_eq "1 $want lib+$RET_CHAIN" \
				"$(awk -v f=$fn -v a1=$(printf %x $((b + 0x51 + add))) '$1 == "C" && $2 == f && $6 ~ "^" a1 "," {
					print $4, $6, $8 }' "$T/$s.regs")" "$s: round $i, $fn's CALL: flags, gp[0..7], lr"
		done
	done
	assert_eq "$(awk '$1 == "C" { print $2, $8 }' "$T/$s.regs" | sort | uniq -c)" \
		"$(awk '$1 == "R" { print $2, $8 }' "$T/$s.regs" | sort | uniq -c)" "$s: lr at the RETURNs"
	# the snapshot starts at the entry sp, with the return address in its first word
	for lr in $(awk '$1 == "reg" && $4 == "C" { print $11 }' "$T/$s.c" | sort -u); do
		"$TOOLS/detail_check" "$T/$s" "$lr" >"$T/$s.canary"
		want=$(awk -v l="$lr" '$1 == "reg" && $4 == "C" && $11 == l { print $3 }' "$T/$s.c" | sort -n)
		got=$(awk '$1 == "canary" && $4 == "C" && $6 == 0 { print $3 }' "$T/$s.canary" | sort -n)
		assert_eq "$want" "$got" "$s: CALLs whose snapshot starts with lr $lr"
	done
done

# ---- typed arguments (-A/-R, --auto-args): the same calls and values as plain probes -----------------------------
A=(-A 'cd_f8@arg1/x,arg2/x,arg3/x,arg4/x,arg5/x,arg6/x,arg7/x,arg8/x' -R 'cd_f8@retval/x')
record acs --call-sites "${A[@]}"
record aplain --no-trampolines "${A[@]}"
"$ATF" dump "$T/acs" | normalise_dump >"$T/acs.tree"
"$ATF" dump "$T/aplain" | normalise_dump >"$T/aplain.tree"
diff "$T/aplain.tree" "$T/acs.tree" >&2 || fail "-A/-R output differs between --call-sites and plain probes"
for want in '\| cd_f8\(0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18\) = 0xa4;$' \
	    '\|   cd_f8\(0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28\) = 0x124;$' \
	    '\|   cd_f8\(0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38\) = 0x1a4;$' \
	    '\|     cd_f8\(0x141, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48\) = 0x324;$' \
	    '\|     cd_f8\(0x2141, 0x2042, 0x2043, 0x2044, 0x2045, 0x2046, 0x2047, 0x2048\) = 0x10324;$'; do
	assert_contains "$T/acs.tree" "$want" "-A/-R with --call-sites"
done
record autocs --call-sites --auto-args
record autoplain --no-trampolines --auto-args
"$ATF" dump "$T/autocs" | normalise_dump >"$T/autocs.tree"
"$ATF" dump "$T/autoplain" | normalise_dump >"$T/autoplain.tree"
diff "$T/autoplain.tree" "$T/autocs.tree" >&2 || fail "--auto-args output differs between --call-sites and plain probes"
for want in '\| cd_f8\(17, 18, 19, 20, 21, 22, 23, 24\) = 164;$' \
	    '\|   cd_f8\(33, 34, 35, 36, 37, 38, 39, 40\) = 292;$' \
	    '\|   cd_f8\(49, 50, 51, 52, 53, 54, 55, 56\) = 420;$' \
	    '\|     cd_f8\(321, 66, 67, 68, 69, 70, 71, 72\) = 804;$'; do
	assert_contains "$T/autocs.tree" "$want" "--auto-args with --call-sites"
done
echo "ok: registers, stack arguments, lr, sp and snapshots through PLT, direct, indirect and tail stubs equal plain probes'"
