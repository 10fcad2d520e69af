#!/usr/bin/env bash
# export -o never deletes or replaces a path it did not create: an existing link, file or
# directory is refused with one line unless --force; --force replaces a file (which then takes
# the session's mode, not the old file's) and follows a link only when it is the caller's and
# leads to the caller's own file or a device, never into another owner's directory; -o - is
# standard output. Another user's plants are played by nobody.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v jq >/dev/null || skip "needs jq"
[ -x "$TOOLS/gen_session" ] || fail "missing $TOOLS/gen_session (make OUTPUT=$OUTPUT tools)"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

chmod 755 "$T"
cd "$T"         # where a file named - would appear
mkdir "$T/s"
"$TOOLS/gen_session" -o "$T/s/pid_4242" --threads 2 --calls 20 --seed 3 >/dev/null
S=$T/s
"$ATF" export "$S" -F folded -o "$T/ref.folded"
[ -s "$T/ref.folded" ] || fail "the reference export is empty"

# refused ERRLINE args...: exit status 1 and exactly that one stderr line.
refused() {
	local want=$1 rc=0; shift
	"$ATF" export "$S" "$@" >/dev/null 2>"$T/err" || rc=$?
	assert_eq 1 "$rc" "exit status of export $*"
	assert_eq "$want" "$(cat "$T/err")" "the one error line of export $*"
}

# 1. -o - is standard output, to a pipe and to a regular file alike
assert_eq "$(cat "$T/ref.folded")" "$("$ATF" export "$S" -F folded -o -)" "-o - into a pipe"
"$ATF" export "$S" -F folded -o - >"$T/redirected"
cmp -s "$T/ref.folded" "$T/redirected" || fail "-o - into a file differs"
[ ! -e "$T/-" ] || fail "-o - created a file named -"
# a usage error: the reason first, then argp's "Try --help" line; stderr goes to a file, not to
# head, which would exit after one line and kill the second write with SIGPIPE
rc=0; "$ATF" export "$S" -F zts -o - >/dev/null 2>"$T/err" || rc=$?
assert_eq 2 "$rc" "exit status of -F zts -o -"
assert_eq "atftrace export: -o -: -F zts writes a directory, not one file" "$(head -n 1 "$T/err")" "-F zts -o -"

# 2. a link at -o, like /dev/stdout with standard output redirected to a file: never replaced
printf 'kept\n' >"$T/target"
ln -s "$T/target" "$T/stdout"
refused "atftrace export: $T/stdout: a symbolic link, not followed without --force (-o - writes to standard output)" \
	-F folded -o "$T/stdout"
[ -L "$T/stdout" ] && [ "$(readlink "$T/stdout")" = "$T/target" ] || fail "the link at -o was replaced"
assert_eq kept "$(cat "$T/target")" "the link's target after a refused export"
# with --force, the caller's own link to the caller's own file is followed: the file gets the trace
"$ATF" export "$S" -F folded -o "$T/stdout" --force
[ -L "$T/stdout" ] || fail "--force replaced the link itself"
cmp -s "$T/ref.folded" "$T/target" || fail "--force did not write through the caller's own link"
# a dangling link is never followed, not even with --force (it would create its target)
ln -s "$T/nothing" "$T/dangling"
refused "atftrace export: $T/dangling: a symbolic link to nothing (it would create its target): not followed" \
	-F folded -o "$T/dangling" --force
[ ! -e "$T/nothing" ] || fail "a dangling link's target was created"

# 3. an existing regular file: refused without --force; with it, replaced and given the session's mode
mkdir -m 1777 "$T/pub"
as_nobody sh -c "umask 0; printf 'planted\n' >'$T/pub/out.folded'"
assert_eq "666 nobody" "$(stat -c '%a %U' "$T/pub/out.folded")" "the planted file"
refused "atftrace export: $T/pub/out.folded: exists; add --force to replace it" -F folded -o "$T/pub/out.folded"
assert_eq planted "$(cat "$T/pub/out.folded")" "the planted file after a refused export"
"$ATF" export "$S" -F folded -o "$T/pub/out.folded" --force
cmp -s "$T/ref.folded" "$T/pub/out.folded" || fail "--force did not replace the file"
assert_eq "600 root" "$(stat -c '%a %U' "$T/pub/out.folded")" "mode and owner of the replaced file (the session's 0600)"
chmod 640 "$S/pid_4242/manifest.json"
"$ATF" export "$S" -F folded -o "$T/pub/out.folded" --force
assert_eq 640 "$(stat -c '%a' "$T/pub/out.folded")" "mode of an export of a 0640 session"
chmod 600 "$S/pid_4242/manifest.json"

# 4. nobody's links: not followed, with or without --force; the link stays and its target is untouched
printf 'secret\n' >"$T/victim"; chmod 600 "$T/victim"
as_nobody ln -s "$T/victim" "$T/pub/link.folded"
refused "atftrace export: $T/pub/link.folded: a symbolic link, not followed without --force (-o - writes to standard output)" \
	-F folded -o "$T/pub/link.folded"
refused "atftrace export: $T/pub/link.folded: a symbolic link of uid 65534, not yours: not followed, even with --force" \
	-F folded -o "$T/pub/link.folded" --force
[ -L "$T/pub/link.folded" ] || fail "nobody's link was replaced"
assert_eq "secret 600" "$(cat "$T/victim") $(stat -c %a "$T/victim")" "the victim"
# root's own link into nobody's directory, to nobody's file: not followed into another owner's directory
as_nobody mkdir -m 755 "$T/pub/nobodys"
as_nobody sh -c "printf 'theirs\n' >'$T/pub/nobodys/f'"
ln -s "$T/pub/nobodys/f" "$T/into"
refused "atftrace export: $T/into: a symbolic link to $T/pub/nobodys/f, not followed: $T/pub/nobodys is owned by uid 65534, not by root: refusing to create files in it" \
	-F folded -o "$T/into" --force
assert_eq theirs "$(cat "$T/pub/nobodys/f")" "nobody's file"

# 5. a directory is refused, with --force too; zts (which writes one) refuses an existing one unless --force
mkdir "$T/dir"
refused "atftrace export: $T/dir: is a directory" -F folded -o "$T/dir"
refused "atftrace export: $T/dir: is a directory" -F folded -o "$T/dir" --force
refused "atftrace export: -o $T/dir: exists; add --force to write into it" -F zts -o "$T/dir"
"$ATF" export "$S" -F zts -o "$T/dir" --force || fail "-F zts --force into an existing directory"
[ -z "$(ls -A "$T" | grep -v '^\(s\|ref.folded\|redirected\|target\|stdout\|dangling\|pub\|victim\|into\|dir\|err\)$')" ] ||
	fail "temporaries left beside the outputs: $(ls -A "$T")"
echo "ok"
