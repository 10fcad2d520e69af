#!/usr/bin/env bash
# A user plants links where root's atftrace writes: none is ever followed to a file. An
# unprivileged user (nobody) prepares directories and links; root then records, recovers and
# exports there (test_export_output.sh and test_recover_links.sh go further). The root-owned 0600 victim must be untouched, and each refusal is one line.
source "$(dirname "$0")/lib.sh"
need_bpf
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

chmod 755 "$T"
printf 'secret\n' >"$T/victim"
chmod 600 "$T/victim"
victim_ok() { [ "$(cat "$T/victim")" = secret ] && [ "$(stat -c %a "$T/victim")" = 600 ] || fail "$1: the victim was changed"; }
mkdir -m 1777 "$T/pub"          # like /tmp: anyone creates, nobody removes another's entries

# 1. nobody's own directory with session.json.tmp and manifest.json.tmp planted: record -a refuses it
as_nobody mkdir -m 777 "$T/pub/attack"
for f in session.json.tmp session.json manifest.json.tmp; do as_nobody ln -s "$T/victim" "$T/pub/attack/$f"; done
rc=0
"$ATF" record -a -f libc.so.6:getpid -o "$T/pub/attack" --duration 0.2 >/dev/null 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "exit status of record -a -o into nobody's directory"
assert_eq "atftrace record: -o $T/pub/attack: $T/pub/attack is owned by uid 65534, not by root: refusing to create files in it" \
	"$(tail -n 1 "$T/err")" "the refusal"
victim_ok "record -a into nobody's directory"

# 2. root's own directory, but writable by everyone and not sticky: refused too
mkdir -m 777 "$T/open"
rc=0; "$ATF" record -o "$T/open/s" -- "$TARGETS/call_chain" 1 >/dev/null 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "exit status of -o under a world-writable directory"
assert_contains "$T/err" "^atftrace record: -o $T/open/s: $T/open is writable by others \(mode 0777\) and not sticky: refusing to create files in it$" "the refusal"

# 3. a link nobody planted in the sticky directory, pointing at a directory of root's
mkdir -m 700 "$T/rootdir"
as_nobody ln -s "$T/rootdir" "$T/pub/trace"
rc=0; "$ATF" record -o "$T/pub/trace" -- "$TARGETS/call_chain" 1 >/dev/null 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "exit status of -o through nobody's link"
assert_contains "$T/err" "is a symbolic link of uid 65534 in a directory others may write to: refusing to follow it$" "the refusal"
[ -z "$(ls -A "$T/rootdir")" ] || fail "something was written through nobody's link"

# 4. a new directory under the sticky one is fine, and its files are root's and private
"$ATF" record -o "$T/pub/mine" -- "$TARGETS/call_chain" 1 >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record under a sticky directory"; }
"$ATF" verify "$T/pub/mine" >/dev/null || fail "verify"

# 5. recover in nobody's copy of a cut session, with every temporary name recover once used planted
cp -r "$T/pub/mine" "$T/pub/copy"
p=$(ls -d "$T/pub/copy"/pid_*)
truncate -s -16 "$p/thread_0/index.atf"
chown -R nobody "$T/pub/copy"
as_nobody ln -s "$T/victim" "$p/thread_0/index.atf.recover.tmp"
as_nobody ln -s "$T/victim" "$p/manifest.json.tmp"
"$ATF" recover "$T/pub/copy" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "recover"; }
victim_ok "recover"
"$ATF" verify "$T/pub/copy" >/dev/null || fail "verify after recover"

# 6. export over nobody's link: refused (with --force too: not root's link), never written through
as_nobody ln -s "$T/victim" "$T/pub/out.json"
for force in "" --force; do
	rc=0; "$ATF" export "$T/pub/mine" -F chrome -o "$T/pub/out.json" $force 2>"$T/err" || rc=$?
	assert_eq 1 "$rc" "exit status of export $force over nobody's link"
	assert_eq 1 "$(wc -l <"$T/err")" "error lines of export $force over nobody's link"
done
victim_ok "export"
[ -L "$T/pub/out.json" ] || fail "the export replaced nobody's link"
echo "ok"
