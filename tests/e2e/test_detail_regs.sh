#!/usr/bin/env bash
# record --detail=always -- detail_args regs: the six argument registers, arguments 7 and 8 from
# the stack, the return value, lr/fp/sp at entry and return, and a canary the caller keeps in its
# frame (found in the callee's stack snapshot) are captured exactly; every link resolves both
# ways (verify, and detail_check reading the files with libatf); --stack-bytes sizes the snapshot.
# fp is checked against the caller's rbp as the target prints it, lr against the caller's code
# range (list-functions, moved to where the target says main runs).
source "$(dirname "$0")/lib.sh"
need_bpf
[ "$(uname -m)" = x86_64 ] || skip "the register names checked here are x86_64's"
CANARY=c0ffee1234567890

record() {   # name, record options...
	local name=$1; shift
	"$ATF" record -o "$T/$name" -f f6 -f f8 -f g -f canary_leaf "$@" -- "$TARGETS/detail_args" regs \
		>"$T/$name.out" 2>"$T/$name.err" || { cat "$T/$name.err" >&2; fail "record $name failed"; }
	"$ATF" verify "$T/$name" >"$T/$name.verify" || { cat "$T/$name.verify" >&2; fail "verify $name"; }
	"$TOOLS/detail_check" "$T/$name" $CANARY >"$T/$name.c" || { grep '^links' "$T/$name.c" >&2; fail "links of $name"; }
	check_frames "$name"
}
# field NAME KIND FUNC FIELD: a field of the "reg" line of FUNC's CALL (C) or RETURN (R)
field() {
	awk -v k="$2" -v f="$3" -v want="$4" '$1 == "reg" && $4 == k && $5 == f {
		for (i = 6; i < NF; i += 2) if ($i == want) print $(i + 1) }' "$T/$1.c"
}
# check_frames NAME: at each CALL, fp is the caller's rbp (printed by the target: its callees'
# entry still sees it) and lr lies inside the caller's code; the RETURN's fp is the CALL's.
"$ATF" list-functions "$TARGETS/detail_args" -s -f main -f canary_caller >"$T/funcs"
check_frames() {
	local f caller want_fp va size lo lr main_rt
	main_rt=$(awk '$1 == "main" { print $2 }' "$T/$1.out")
	[ -n "$main_rt" ] || fail "$1: the target did not print where main runs"
	for f in f6 f8 g canary_leaf; do
		caller=main
		[ $f = canary_leaf ] && caller=canary_caller
		want_fp=$(awk -v c=$caller '{ for (i = 1; i < NF; i++) if ($i == "frame" && $(i + 1) == c) print $(i + 2) }' "$T/$1.out")
		assert_eq "$(printf %x $((want_fp)))" "$(field "$1" C $f fp)" "$1: $f's fp at CALL = $caller's rbp"
		assert_eq "$(field "$1" C $f fp)" "$(field "$1" R $f fp)" "$1: $f's fp at RETURN = at CALL"
		read -r va size <<<"$(awk -v c=$caller '$NF == c { print $1, $4 }' "$T/funcs")"  # VA, file offset, source, size
		[ -n "$size" ] || fail "list-functions did not list $caller"
		lo=$((main_rt - $(awk '$NF == "main" { print $1 }' "$T/funcs") + va))
		lr=$((0x$(field "$1" C $f lr)))
		[ $lr -gt $lo ] && [ $lr -lt $((lo + size)) ] \
			|| fail "$1: $f's lr $(printf %x $lr) is outside $caller ($(printf %x $lo) + $size)"
	done
}

record all --detail=always
c=$T/all.c
assert_eq "thread 0 index 8 detail 8 file yes flag 1 has_detail yes" \
	"$(awk '$1 == "thread" { print $1, $3, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 }' "$c")" "thread line"
assert_eq "links 0 ok 8" "$(grep '^links' "$c")" "links"
assert_eq "0 0" "$(awk '$1 == "process" { print $4, $6 }' "$c")" "lost events and lost detail"

# arguments: registers in SysV order; f8's 7th and 8th from [rsp+8] and [rsp+16] (flag bit 0)
assert_eq "1,2,3,4,5,6" "$(field all C f6 gp | cut -d, -f1-6)" "f6 argument registers"
assert_eq "11,12,13,14,15,16,17,18" "$(field all C f8 gp)" "f8 arguments 1-8"
assert_eq 1 "$(field all C f8 flags)" "f8 flags (stack arguments read)"
# return value in gp[0] (rax)
assert_eq 1122334455667788 "$(field all R g gp | cut -d, -f1)" "g() return value"
assert_eq "0,0,0,0,0,0" "$(field all R g gp | cut -d, -f3-8)" "g() RETURN gp[2..7]"
# lr: the return address read at entry is the address the return probe sees; sp: ret popped 8 bytes
for f in f6 f8 g canary_leaf; do
	assert_eq "$(field all C $f lr)" "$(field all R $f lr)" "$f: lr at CALL vs RETURN"
	assert_eq "$(printf '%x' $((0x$(field all C $f sp) + 8)))" "$(field all R $f sp)" "$f: sp at RETURN"
	assert_eq 256 "$(field all C $f stack)" "$f: CALL stack bytes"
	assert_eq 256 "$(field all R $f stack)" "$f: RETURN stack bytes"
done
# the caller's canary is in the callee's snapshot, above the return address
off=$(awk '$1 == "canary" && $4 == "C" && $5 == "canary_leaf" { print $6 }' "$c")
[ -n "$off" ] && [ "$off" -ge 8 ] || fail "canary not in canary_leaf's CALL snapshot (offset '$off')"

# dump shows them by register name
"$ATF" dump "$T/all" >"$T/dump"
assert_contains "$T/dump" '^    args: rdi=0x1 rsi=0x2 rdx=0x3 rcx=0x4 r8=0x5 r9=0x6 ' "dump of f6"
assert_contains "$T/dump" '^    args: rdi=0x11 rsi=0x12 rdx=0x13 rcx=0x14 r8=0x15 r9=0x16 arg7=0x17 arg8=0x18$' "dump of f8"
assert_contains "$T/dump" '^    ret: rax=0x1122334455667788$' "dump of g's return"

# the other attach styles (uprobe_multi links, perf-event uprobes) run the same BPF code
for kind in multi perf; do
	export ATFTRACE_LINK=$kind
	if ! "$ATF" record -o "$T/probe_$kind" -f g -- "$TARGETS/detail_args" regs 2>"$T/probe_$kind.err"; then
		grep -q "not supported by this kernel" "$T/probe_$kind.err" && continue
		cat "$T/probe_$kind.err" >&2; fail "record with ATFTRACE_LINK=$kind"
	fi
	record $kind --detail=always
	unset ATFTRACE_LINK
	assert_eq "links 0 ok 8" "$(grep '^links' "$T/$kind.c")" "$kind: links"
	assert_eq 11,12,13,14,15,16,17,18 "$(field $kind C f8 gp)" "$kind: f8 arguments 1-8"
	assert_eq 1122334455667788 "$(field $kind R g gp | cut -d, -f1)" "$kind: g() return value"
	[ -n "$(awk '$1 == "canary" && $4 == "C" && $5 == "canary_leaf"' "$T/$kind.c")" ] || fail "$kind: canary"
done
unset ATFTRACE_LINK

# --stack-bytes: the snapshot size; 0 keeps the registers
record small --detail=always --stack-bytes 16
assert_eq "16 16" "$(echo $(field small C canary_leaf stack) $(field small R g stack))" "--stack-bytes 16"
assert_eq 11,12,13,14,15,16,17,18 "$(field small C f8 gp)" "f8 arguments with 16 stack bytes"
record none --detail=always --stack-bytes 0
assert_eq "0 0" "$(echo $(field none C f6 stack) $(field none R f6 stack))" "--stack-bytes 0"
assert_eq 1122334455667788 "$(field none R g gp | cut -d, -f1)" "return value with no stack bytes"
[ -z "$(grep '^canary' "$T/none.c")" ] || fail "a canary in a 0-byte snapshot"

# bad values are refused with one line
for bad in "--stack-bytes 257" "--stack-bytes -1" "--detail sometimes" "--detail-count 3" \
	   "--detail=always --detail-after 1" "--detail-on nosuchfunction_xyz"; do
	if "$ATF" record -o "$T/bad" $bad -f f6 -- "$TARGETS/detail_args" regs 2>"$T/bad.err"; then
		fail "record $bad succeeded"
	fi
	assert_contains "$T/bad.err" '^atftrace record: ' "error line for $bad"
done
echo "ok: registers, return value, lr/sp, canary, links and stack sizes exact"
