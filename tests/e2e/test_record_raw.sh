#!/usr/bin/env bash
# A real recording read from its raw bytes by tests/tools/atf_raw, which shares no code with
# libatf (written from the ATF v2 spec and docs/detail-payload.md), and compared with what the
# target is known to have done: header fields, CRCs, every event (kind, function, depth, link),
# and the registers of every detail record. Then libatf's view (detail_check) must agree with it
# record by record, so neither the writer nor the reader can be wrong in a way the other hides.
source "$(dirname "$0")/lib.sh"
need_bpf
[ "$(uname -m)" = x86_64 ] || skip "the register values checked here are x86_64's"

"$ATF" record -o "$T/s" --detail=always -f f6 -f f8 -f g -f canary_leaf -- "$TARGETS/detail_args" regs \
	>"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "record failed"; }
dir=$(echo "$T"/s/pid_*)
pid=${dir##*pid_}
"$TOOLS/atf_raw" "$dir/thread_0" >"$T/raw" || fail "atf_raw: $(grep '^bad' "$T/raw")"
"$TOOLS/atf_raw" -d "$dir/thread_0" >"$T/raw.d" || fail "atf_raw -d: $(grep '^bad' "$T/raw.d")"

# header: the main thread's tid, 8 events, detail flag, x86_64, Linux, CLOCK_BOOTTIME, CRC ok
assert_eq "index tid $pid events 8 flags 1 arch 1 os 4 clock 3" "$(awk '$1 == "index" { print $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }' "$T/raw")" "index header"
assert_eq "crc ok" "$(awk '$1 == "index" { print $(NF - 1), $NF }' "$T/raw")" "index CRC"
assert_eq "detail records 8" "$(grep '^detail ' "$T/raw")" "detail header"

# events: each function called and returned once, in program order, at depth 0, each linked to
# the detail record of the same number; function ids named through the manifest
jq -r '.symbols[] | "\(.function_id) \(.name)"' "$dir/manifest.json" >"$T/names"
assert_eq "C f6 0 0 R f6 0 1 C f8 0 2 R f8 0 3 C g 0 4 R g 0 5 C canary_leaf 0 6 R canary_leaf 0 7" \
	"$(awk 'NR == FNR { name[$1] = $2; next } $1 == "ev" { printf "%s%s %s %s %s", sep, $3, name[$4], $5, $6; sep = " " }' "$T/names" "$T/raw")" \
	"events"
sort -n -c <(awk '$1 == "ev" { print $7 }' "$T/raw") || fail "timestamps out of order"

# regs FIELD SEQ: a field of detail record SEQ (hex; gp as G0,...,G7)
regs() { awk -v f="$1" -v s="$2" '$1 == "reg" && $2 == s { for (i = 7; i < NF; i += 2) if ($i == f) print $(i + 1) }' "$T/raw"; }
assert_eq "1,2,3,4,5,6" "$(regs gp 0 | cut -d, -f1-6)" "f6 arguments"
assert_eq "11,12,13,14,15,16,17,18" "$(regs gp 2)" "f8 arguments 1-8"
assert_eq "1 0 1 0 1 0 1 0" "$(awk '$1 == "reg" { printf "%s%s", s, $5; s = " " }' "$T/raw")" "flags (stack arguments read at calls)"
assert_eq 1122334455667788 "$(regs gp 5 | cut -d, -f1)" "g's return value"
main_fp=$(awk '$1 == "main" { print $5 }' "$T/out")
cc_fp=$(awk '$2 == "canary_caller" { print $3 }' "$T/out")
for s in 0 1 2 3 4 5; do
	assert_eq "$(printf %x $((main_fp)))" "$(regs fp $s)" "record $s: fp is main's rbp"
done
for s in 6 7; do
	assert_eq "$(printf %x $((cc_fp)))" "$(regs fp $s)" "record $s: fp is canary_caller's rbp"
done
for c in 0 2 4 6; do
	assert_eq "$(regs lr $c)" "$(regs lr $((c + 1)))" "record $c: lr at CALL and RETURN"
	assert_eq "$(printf %x $((0x$(regs sp $c) + 8)))" "$(regs sp $((c + 1)))" "record $c: sp at RETURN"
	assert_eq 256 "$(regs stack $c)" "record $c: stack bytes"
done

# libatf reads the same: detail_check's lines carry the same values, record by record
"$TOOLS/detail_check" "$T/s" >"$T/c" || fail "detail_check"
assert_eq "$(awk '$1 == "reg" { print $3, $4, $5, $8, $10, $12, $14, $16 }' "$T/raw")" \
	"$(awk '$1 == "reg" { print $3, $4, $7, $9, $11, $13, $15, $17 }' "$T/c")" "libatf's registers = the raw bytes'"
assert_eq "$(awk '$1 == "ev" { print $2, $3, $5, ($6 == "-" ? "-" : "D"), $7 }' "$T/raw")" \
	"$(awk '$1 == "ev" { print $3, $4, $6, $7, $8 }' "$T/c")" "libatf's events = the raw bytes'"
echo "ok: header, CRCs, 8 events and 8 detail records read from the raw bytes, as the target did them"
