#!/usr/bin/env bash
# recover leaves a session that verify accepts, and touches nothing outside it:
#  - an index cut short drops the detail records of the events it lost; a detail file cut short
#    leaves its index events whole, only without their link; no whole event is lost;
#  - verify rejects header flags and clock_type values ATF v2 does not define, with file:offset;
#  - root recovering nobody's session follows none of nobody's links out of it, and every file
#    it writes there belongs to nobody, as the session does; verify and export refuse the link.
source "$(dirname "$0")/lib.sh"
need_bpf
[ -x "$TOOLS/gen_session" ] && [ -x "$TOOLS/atf_raw" ] || fail "missing $TOOLS tools (make OUTPUT=$OUTPUT tools)"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

gen() { mkdir -p "$1"; "$TOOLS/gen_session" -o "$1/pid_1" --threads 1 --calls 30 --detail --detail-every 2 --seed 7 >/dev/null; }
# evs THREAD_DIR: the index events as atf_raw decodes them from the bytes
evs() { "$TOOLS/atf_raw" "$1" | grep '^ev '; }

# 1. the index cut in its middle (a torn record, no footer): detail.atf holds records past its end
gen "$T/a"
th=$T/a/pid_1/thread_0
evs "$th" >"$T/a.ev"
n=$(wc -l <"$T/a.ev"); k=$((n / 2))
head -n $k "$T/a.ev" >"$T/a.want"
d=$(awk '$6 != "-"' "$T/a.want" | wc -l)
[ $d -gt 0 ] && [ $d -lt 167 ] || fail "the cut must leave some detail records and drop others ($d)"
truncate -s $((64 + k * 32 + 5)) "$th/index.atf"
"$ATF" recover "$T/a" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "recover after an index cut"; }
"$ATF" verify "$T/a" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "verify after recover of an index cut"; }
assert_eq "OK $T/a/pid_1: 1 thread, $k events, $d detail events" "$(cat "$T/out")" "verify after an index cut"
evs "$th" >"$T/a.got"
cmp -s "$T/a.want" "$T/a.got" || fail "the whole events before the cut changed"
assert_eq "detail records $d" "$("$TOOLS/atf_raw" "$th" | grep '^detail')" "detail records kept"

# 2. detail.atf cut in its middle: its index events stay, only their links to cut records go
gen "$T/b"
th=$T/b/pid_1/thread_0
evs "$th" >"$T/b.ev"
truncate -s $((64 + 80 * 156 + 10)) "$th/detail.atf"
awk '{ if ($6 != "-" && $6 >= 80) $6 = "-"; print }' "$T/b.ev" >"$T/b.want"
"$ATF" recover "$T/b" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "recover after a detail cut"; }
"$ATF" verify "$T/b" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "verify after recover of a detail cut"; }
assert_eq "OK $T/b/pid_1: 1 thread, $n events, 80 detail events" "$(cat "$T/out")" "verify after a detail cut"
evs "$th" >"$T/b.got"
cmp -s "$T/b.want" "$T/b.got" || fail "index events changed beyond losing their links to cut detail"

# 3. header fields verify must reject: flags beyond bit 0, clock_type beyond 1..3
poke() { printf "\\x$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
gen "$T/c"
"$ATF" verify "$T/c" >/dev/null || fail "verify of a good session"
ix=$T/c/pid_1/thread_0/index.atf
cp "$ix" "$T/ix.good"
for c in "8 f1 header flags 0xf1: only bit 0 (has_detail) is defined" \
	 "16 83 header clock_type 131 is not 1 (mach_continuous), 2 (qpc) or 3 (boottime)"; do
	read -r off byte msg <<<"$c"
	cp "$T/ix.good" "$ix"
	poke "$ix" "$off" "$byte"
	rc=0; "$ATF" verify "$T/c" >/dev/null 2>"$T/err" || rc=$?
	assert_eq 1 "$rc" "exit status of verify with byte $off = 0x$byte"
	assert_eq "atftrace verify: $ix:$off: $msg" "$(cat "$T/err")" "verify with byte $off = 0x$byte"
done
for clock in 01 02; do
	cp "$T/ix.good" "$ix"; poke "$ix" 16 "$clock"
	"$ATF" verify "$T/c" >/dev/null || fail "verify refused clock_type $clock (ATF v2 defines it)"
done

# 4. root recovers nobody's session: nobody's thread_1 is a link into a root-only directory
#    holding a recoverable index of root's, and nobody's manifest is 0666
chmod 755 "$T"
mkdir "$T/n"; "$TOOLS/gen_session" -o "$T/n/pid_1" --threads 2 --calls 10 --seed 9 >/dev/null
mkdir -m 700 "$T/rootonly"
cp -a "$T/n/pid_1/thread_1" "$T/rootonly/"
truncate -s -40 "$T/rootonly/thread_1/index.atf"      # no footer: recover would rewrite it
cp -a "$T/rootonly" "$T/rootonly.orig"
chown -R nobody:nogroup "$T/n"
chmod 666 "$T/n/pid_1/manifest.json"
truncate -s -40 "$T/n/pid_1/thread_0/index.atf"       # a real repair in nobody's own thread
as_nobody rm -r "$T/n/pid_1/thread_1"
as_nobody ln -s "$T/rootonly/thread_1" "$T/n/pid_1/thread_1"
rc=0; "$ATF" recover "$T/n" >"$T/out" 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "exit status of recover with a link planted as a thread directory"
assert_eq "atftrace recover: $T/n/pid_1/thread_1: a symbolic link: not followed, left alone" "$(cat "$T/err")" \
	"recover's line about the link"
diff -r "$T/rootonly.orig" "$T/rootonly" >/dev/null || fail "recover wrote into root's directory through nobody's link"
[ -L "$T/n/pid_1/thread_1" ] || fail "the link was replaced"
assert_contains "$T/out" "^repaired $T/n/pid_1/thread_0/index.atf: " "recover of nobody's own thread"
assert_eq "" "$(find "$T/n" ! -user nobody -printf '%p %u\n')" "files in nobody's session not nobody's"
assert_eq "666 nobody" "$(stat -c '%a %U' "$T/n/pid_1/manifest.json")" "the manifest's mode and owner"
for cmd in verify export; do
	rc=0
	if [ $cmd = verify ]; then "$ATF" verify "$T/n" >/dev/null 2>"$T/err" || rc=$?
	else "$ATF" export "$T/n" -F chrome -o "$T/n.json" >/dev/null 2>"$T/err" || rc=$?; fi
	assert_eq 1 "$rc" "exit status of $cmd through the link"
	assert_contains "$T/err" "thread_1/index.atf.*symbolic link, not followed" "$cmd's line about the link"
done
[ ! -e "$T/n.json" ] || fail "export wrote an output from a session it could not read"
echo "ok"
