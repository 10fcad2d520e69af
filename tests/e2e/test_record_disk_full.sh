#!/usr/bin/env bash
# Disk full while recording: the recorder says so (one line at once, a count at exit, exit 1),
# its summary counts exactly the events that reached the disk, and those are all recoverable.
source "$(dirname "$0")/lib.sh"
need_bpf
mkdir -p "$T/small"
mount -t tmpfs -o size=128k tmpfs "$T/small" || fail "cannot mount a small tmpfs"
trap 'umount "$T/small" 2>/dev/null; rm -rf "$T"' EXIT

if "$ATF" record -o "$T/small/s" -- "$TARGETS/call_chain" 20000 >/dev/null 2>"$T/err"; then
	fail "recording onto a full disk exited 0"
fi
assert_contains "$T/err" "No space left on device" "the disk-full error line"
assert_contains "$T/err" "events could not be written" "the count of unwritten events"
n=$(sed -n 's/^atftrace record: \([0-9]*\) events (.*/\1/p' "$T/err")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "no summary line with an event count: $(cat "$T/err")"

# written + unwritten + lost in the ring = what the target generated (the same run on a roomy disk)
"$ATF" record -o "$T/ref" -- "$TARGETS/call_chain" 20000 >/dev/null 2>"$T/ref.err" || fail "reference run"
generated=$(sed -n 's/^atftrace record: \([0-9]*\) events (.*/\1/p' "$T/ref.err")
unwritten=$(sed -n 's/^atftrace record: \([0-9]*\) events could not be written$/\1/p' "$T/err")
lost=$(sed -n 's/^atftrace record: .*, \([0-9]*\) lost, .*/\1/p' "$T/err")
assert_eq "$generated" "$((n + unwritten + lost))" "written $n + unwritten $unwritten + lost $lost vs generated"

# what reached the disk, read back elsewhere after recovery, is exactly what the summary counted
cp -r "$T/small/s" "$T/copy"
"$ATF" recover "$T/copy" >/dev/null || fail "recover"
"$ATF" verify "$T/copy" >/dev/null || fail "verify after recover"
"$TOOLS/record_stats" "$T/copy" >"$T/stats"
assert_eq "$n" "$(awk '$1 == "process" { print $6 }' "$T/stats")" "events on disk vs the summary"
echo "ok"
