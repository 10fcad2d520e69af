#!/usr/bin/env bash
# Inspection subcommands on synthetic sessions (no root needed): verify accepts generated
# sessions and rejects each corruption with its own message, recover repairs sessions cut short
# without losing a whole event, dump prints the expected call tree, info prints the counts.
source "$(dirname "$0")/lib.sh"

GEN=$TOOLS/gen_session
[ -x "$GEN" ] || fail "missing $GEN (make OUTPUT=$OUTPUT tools)"
[ -x "$ATF_ASAN" ] || fail "missing $ATF_ASAN (make OUTPUT=$OUTPUT $OUTPUT/asan/atftrace)"

# gen DIR ARGS...: generate and print "threads events detail" from gen_session's summary line.
gen() {
	local dir=$1; shift
	"$GEN" -o "$dir" "$@" >"$T/gen.out" || fail "gen_session $* failed"
	sed -nE 's/^gen_session: .*: ([0-9]+) threads, ([0-9]+) events, ([0-9]+) detail events$/\1 \2 \3/p' "$T/gen.out"
}

# total_events DIR: index and detail events as a lenient reader sees them (info's totals line).
total_events() {
	"$ATF_ASAN" info "$1" >"$T/info.out" || fail "info $1 failed"
	sed -nE 's/^events: +([0-9]+) index, ([0-9]+) detail$/\1 \2/p' "$T/info.out"
}

# ---- verify accepts generated sessions, with and without detail -----------------------------
for variant in plain detail; do
	dir=$T/ok_$variant
	args=(--threads 4 --calls 6 --depth 4 --recursion 5 --seed 3)
	[ $variant = detail ] && args+=(--detail --detail-every 2 --stack-bytes 256)
	read -r threads events detail <<<"$(gen "$dir" "${args[@]}")"
	[ "$events" -gt 100 ] || fail "$variant: only '$events' events generated"
	if [ $variant = detail ]; then [ "$detail" -gt 0 ] || fail "no detail generated"; else assert_eq 0 "$detail" "detail events"; fi
	"$ATF_ASAN" verify "$dir" >"$T/v.out" 2>"$T/v.err" || { cat "$T/v.err" >&2; fail "verify rejected a $variant session"; }
	assert_eq "OK $dir: $threads threads, $events events, $detail detail events" "$(cat "$T/v.out")" "verify $variant"
	assert_eq "" "$(cat "$T/v.err")" "verify $variant stderr"
done

# ---- every corruption is rejected with exit 1 and its own message -----------------------------
declare -A expect=(
	[crc]='thread_0/index.atf:64: events CRC 0x[0-9a-f]{8}, footer says'
	[truncate]='thread_0/index.atf:[0-9]+: no valid footer'
	[no-footer]='thread_0/index.atf:[0-9]+: no valid footer'
	[time-order]='thread_0/index.atf:[0-9]+: event [0-9]+: timestamp [0-9]+ is before the previous event'
	[bad-magic]='thread_0/index.atf:0: magic is not ATI2'
	[nesting]='thread_0/index.atf:[0-9]+: event [0-9]+: return at depth [0-9]+, but its call was at depth'
	[dangling-link]='thread_0/index.atf:[0-9]+: event [0-9]+: dangling detail_seq 2147483647'
	[unknown-function]='thread_0/index.atf:[0-9]+: event [0-9]+: function id 0xdeadbeef00000001 not in the manifest symbols'
	[count]='thread_0/index.atf:[0-9]+: footer event_count [0-9]+, header says'
	[manifest]='manifest.json:0: "threads": missing'
)
for mode in "${!expect[@]}"; do
	for variant in plain detail; do
		dir=$T/bad_${mode}_$variant
		args=(--seed 5 --corrupt "$mode")
		[ $variant = detail ] && args+=(--detail --detail-every 1)
		gen "$dir" "${args[@]}" >/dev/null
		rc=0
		"$ATF_ASAN" verify "$dir" >"$T/v.out" 2>"$T/v.err" || rc=$?
		assert_eq 1 "$rc" "verify exit for --corrupt $mode ($variant)"
		assert_eq 1 "$(wc -l <"$T/v.err")" "one error line for --corrupt $mode ($variant)"
		assert_contains "$T/v.err" "^atftrace verify: $dir/${expect[$mode]}" "verify message for --corrupt $mode ($variant)"
		assert_eq "" "$(cat "$T/v.out")" "no OK line for --corrupt $mode ($variant)"
	done
done

# ---- recover repairs sessions cut short; no whole event is lost -------------------------------
for mode in truncate no-footer; do
	for variant in plain detail; do
		dir=$T/rec_${mode}_$variant
		args=(--seed 5 --corrupt "$mode")
		[ $variant = detail ] && args+=(--detail --detail-every 1)   # the cut event has detail too
		read -r _ generated gen_detail <<<"$(gen "$dir" "${args[@]}")"
		read -r before before_detail <<<"$(total_events "$dir")"
		if [ $mode = truncate ]; then
			assert_eq $((generated - 1)) "$before" "whole events left by --corrupt truncate ($variant)"
		else
			assert_eq "$generated" "$before" "whole events left by --corrupt no-footer ($variant)"
		fi
		"$ATF_ASAN" recover "$dir" >"$T/r.out" 2>"$T/r.err" || { cat "$T/r.err" >&2; fail "recover $mode $variant failed"; }
		assert_contains "$T/r.out" "^repaired $dir/thread_0/index.atf: header and footer rewritten, [0-9]+ records kept" \
			"recover report ($mode $variant)"
		"$ATF_ASAN" verify "$dir" >"$T/v.out" 2>"$T/v.err" || { cat "$T/v.err" >&2; fail "verify after recover ($mode $variant)"; }
		read -r after after_detail <<<"$(total_events "$dir")"
		assert_eq "$before" "$after" "events before/after recover ($mode $variant)"
		assert_eq "$before_detail" "$after_detail" "detail events before/after recover ($mode $variant)"
		if [ $mode = truncate ] && [ $variant = detail ]; then
			assert_eq $((gen_detail - 1)) "$after_detail" "detail records after truncate + recover"
		fi
		"$ATF_ASAN" recover "$dir" >"$T/r2.out" || fail "second recover failed"
		assert_eq "$dir: nothing to repair" "$(cat "$T/r2.out")" "recover is idempotent ($mode $variant)"
	done
done

# recover extends a manifest that lacks thread directories
dir=$T/rec_unlisted
gen "$dir" --threads 3 --seed 2 >/dev/null
sed -i 's/"id": 2,/"id": 7,/' "$dir/manifest.json"   # thread_2 unlisted; thread_7 listed but absent
rc=0; "$ATF_ASAN" verify "$dir" 2>"$T/v.err" >/dev/null || rc=$?
assert_eq 1 "$rc" "verify with an unlisted thread directory"
assert_contains "$T/v.err" 'directory thread_2 is not listed in "threads"' "unlisted thread message"
"$ATF_ASAN" recover "$dir" >"$T/r.out" || fail "recover of an unlisted thread failed"
assert_contains "$T/r.out" '^manifest: thread_2 was not listed, added$' "recover adds thread_2"
grep -q '"tid": 4244' "$dir/manifest.json" || fail "recovered thread_2 lacks its tid from the index header"

# verify refuses a manifest that lists one function id twice
dir=$T/dup_symbol
gen "$dir" --threads 1 --seed 3 >/dev/null
jq '.symbols += [.symbols[0]]' "$dir/manifest.json" >"$T/m.json" && mv "$T/m.json" "$dir/manifest.json"
rc=0; "$ATF_ASAN" verify "$dir" 2>"$T/v.err" >/dev/null || rc=$?
assert_eq 1 "$rc" "verify with a duplicated symbol"
assert_contains "$T/v.err" 'symbols: function id 0x[0-9a-f]{16} \(.*\) listed twice' "duplicated symbol message"

# ---- dump: the call tree of a small fixed-seed session ----------------------------------------
dir=$T/small
gen "$dir" --threads 2 --calls 2 --depth 2 --recursion 2 --detail --detail-every 5 --stack-bytes 8 --seed 16 >/dev/null
"$ATF_ASAN" dump "$dir" >"$T/dump.raw" || fail "dump failed"
normalise_dump <"$T/dump.raw" >"$T/dump.out"
cat >"$T/dump.want" <<'EOF'
# thread_0 tid=T0 name=main events=8
      [T0] | main() {
<dur> [T0] |   lib_hash();
      [T0] |   lib_free() {
      [T0] |     foo::Bar::method(int) {
    args: rdi=0xc61910f052f99caf rsi=0xb93120760b6b360 rdx=0x4e15520eae31c3 rcx=0x84afe665ab041 r8=0xa62dece9d598 r9=0x9534f38a03d arg7=0x7b23b216bc arg8=0xd4bf1b70d
<dur> [T0] |     } /* foo::Bar::method */ (unwound)
<dur> [T0] |   } /* lib_free */
<dur> [T0] | } /* main */
# thread_1 tid=T1 name=worker-1 events=6
      [T1] | worker_loop() {
<dur> [T1] |   quote"back\slash();
<dur> [T1] |   quote"back\slash();
    ret: rax=0x92e35a5bc5a60624
<dur> [T1] | } /* worker_loop */
EOF
diff -u "$T/dump.want" "$T/dump.out" >&2 || fail "dump tree differs from the expected one"
# times are relative to the manifest's start, durations exact (events at +582 ns and +2588 ns)
assert_contains "$T/dump.raw" '^ +582 ns +2\.006 us \[  4242\] \|   lib_hash\(\);$' "dump call time and duration"
assert_contains "$T/dump.raw" '^ +7\.807 us +7\.276 us \[  4242\] \| \} /\* main \*/$' "dump return time and duration"

"$ATF_ASAN" dump --merged "$dir" | normalise_dump >"$T/merged.out" || fail "dump --merged failed"
cat >"$T/merged.want" <<'EOF'
      [T0] | worker_loop() {
      [T1] | main() {
<dur> [T1] |   lib_hash();
<dur> [T0] |   quote"back\slash();
      [T1] |   lib_free() {
<dur> [T0] |   quote"back\slash();
    ret: rax=0x92e35a5bc5a60624
      [T1] |     foo::Bar::method(int) {
    args: rdi=0xc61910f052f99caf rsi=0xb93120760b6b360 rdx=0x4e15520eae31c3 rcx=0x84afe665ab041 r8=0xa62dece9d598 r9=0x9534f38a03d arg7=0x7b23b216bc arg8=0xd4bf1b70d
<dur> [T1] |     } /* foo::Bar::method */ (unwound)
<dur> [T1] |   } /* lib_free */
<dur> [T0] | } /* worker_loop */
<dur> [T1] | } /* main */
EOF
diff -u "$T/merged.want" "$T/merged.out" >&2 || fail "dump --merged order differs"

# --thread and --from/--to (since the session start): exactly the lib_hash call and return of
# thread_0, in one line; one thread printed, so no TID column
"$ATF_ASAN" dump "$dir" --thread 0 --from 582 --to 2.588us >"$T/range.out" || fail "dump range"
cat >"$T/range.want" <<'EOF'
# thread_0 tid=4242 name=main events=8
      582 ns     2.006 us |   lib_hash();
EOF
diff -u "$T/range.want" "$T/range.out" >&2 || fail "dump --thread 0 --from/--to"
rc=0; "$ATF_ASAN" dump "$dir" --from 5 --to 4 >/dev/null 2>"$T/e.err" || rc=$?
[ $rc -ne 0 ] || fail "dump --from after --to was accepted"
assert_contains "$T/e.err" 'to: earlier than --from' "dump --from/--to error"

# ---- info prints the counts -------------------------------------------------------------------
"$ATF_ASAN" info "$dir" >"$T/info.out" || fail "info failed"
assert_contains "$T/info.out" '^pid: +4242$' "info pid"
assert_contains "$T/info.out" '^modules: +2$' "info modules"
assert_contains "$T/info.out" '^symbols: +11$' "info symbols"
assert_contains "$T/info.out" '^events: +14 index, 2 detail$' "info totals"
assert_contains "$T/info.out" '^  thread_0  tid=4242  name=main  events=8  detail=1  time=[0-9]+\.\.[0-9]+  duration=7\.276 us  recovered=no$' "info thread_0"
assert_contains "$T/info.out" '^  thread_1  tid=4243  name=worker-1  events=6  detail=1 .* recovered=no$' "info thread_1"

# ---- a session directory with several pid_* directories, in numeric order ---------------------
mkdir -p "$T/sess"
cp -r "$dir" "$T/sess/pid_12"
cp -r "$T/ok_plain" "$T/sess/pid_5"
"$ATF_ASAN" verify "$T/sess" >"$T/v.out" || fail "verify of a session directory"
assert_eq "OK $T/sess/pid_5 OK $T/sess/pid_12" "$(cut -d: -f1 "$T/v.out" | tr '\n' ' ' | sed 's/ $//')" "verify order"
"$ATF_ASAN" dump "$T/sess" | grep '^## ' >"$T/heads.out"
assert_eq "## pid_5 ## pid_12" "$(tr '\n' ' ' <"$T/heads.out" | sed 's/ $//')" "dump pid headings"

# ---- bad input: one clear line, non-zero exit ------------------------------------------------
rc=0; "$ATF_ASAN" verify "$T/nowhere" >/dev/null 2>"$T/e.err" || rc=$?
assert_eq 1 "$rc" "verify of a missing path"
assert_eq 1 "$(wc -l <"$T/e.err")" "one error line for a missing path"
mkdir "$T/empty"
rc=0; "$ATF_ASAN" info "$T/empty" >/dev/null 2>"$T/e.err" || rc=$?
assert_eq 1 "$rc" "info of a directory that is no session"
assert_contains "$T/e.err" 'not a session' "no-session message"
echo "inspect: all checks passed"
