#!/usr/bin/env bash
# Sessions hold stack memory and command lines: 0700 directories of 0600 files by default, whatever
# the umask; record --mode MODE sets the files' mode exactly (directories get the matching x
# bits); exports take the mode of the session they come from; recover keeps a file's mode. And
# -o refuses a non-empty directory that is not a session.
source "$(dirname "$0")/lib.sh"
need_bpf

# modes DIR: "mode type" of everything under DIR (DIR included), sorted and counted
modes() { find "$1" -printf '%m %y\n' | sort | uniq -c | awk '{ print $2, $3, $1 }' | tr '\n' ';'; }

# default, under a permissive umask: nothing readable by others
(umask 000; "$ATF" record -o "$T/def" --detail=always -- "$TARGETS/call_chain" 2 >/dev/null 2>"$T/err") \
	|| { cat "$T/err" >&2; fail "record"; }
assert_eq "600 f 3;700 d 3;" "$(modes "$T/def")" "default modes (session, pid, thread dirs; manifest, index, detail)"

# system-wide: session.json too
(umask 000; "$ATF" record -a -f libc.so.6:getpid -o "$T/sys" --duration 0.2 >/dev/null 2>"$T/err") \
	|| { cat "$T/err" >&2; fail "record -a"; }
assert_eq 600 "$(stat -c %a "$T/sys/session.json")" "session.json"
[ -z "$(find "$T/sys" -perm /077)" ] || fail "record -a left files others may read: $(find "$T/sys" -perm /077)"

# --mode 0640 under a narrow umask: exactly 0640 files, 0750 directories
(umask 077; "$ATF" record -o "$T/grp" --mode 0640 -- "$TARGETS/call_chain" 2 >/dev/null 2>"$T/err") \
	|| { cat "$T/err" >&2; fail "record --mode"; }
assert_eq "640 f 2;750 d 3;" "$(modes "$T/grp")" "--mode 0640"

# exports follow their session; zts writes a directory
(umask 000; "$ATF" export "$T/def" -F chrome -o "$T/def.json" && "$ATF" export "$T/grp" -F chrome -o "$T/grp.json" \
	&& "$ATF" export "$T/def" -F zts -o "$T/def.zts") >/dev/null || fail "export"
assert_eq 600 "$(stat -c %a "$T/def.json")" "export of a default session"
assert_eq 640 "$(stat -c %a "$T/grp.json")" "export of a --mode 0640 session"
assert_eq "600 f 2;700 d 2;" "$(modes "$T/def.zts")" "zts export of a default session"

# recover rewrites a file and the manifest in place and keeps their modes
p=$(ls -d "$T/grp"/pid_*)
truncate -s -16 "$p/thread_0/index.atf"
"$ATF" recover "$T/grp" >/dev/null || fail "recover"
assert_eq "640 f 2;750 d 3;" "$(modes "$T/grp")" "modes after recover"
# -o takes a new or empty directory, or a session; anything else is refused, untouched
mkdir "$T/notes" && echo keep >"$T/notes/todo.txt"
rc=0; "$ATF" record -o "$T/notes" -- "$TARGETS/call_chain" 1 >/dev/null 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "exit status of -o into a directory that is not a session"
assert_eq "atftrace record: -o $T/notes: not empty and not a session (it holds 'todo.txt'); give a new or empty directory" \
	"$(tail -n 1 "$T/err")" "the refusal"
assert_eq "todo.txt" "$(ls "$T/notes")" "the directory's contents"
mkdir "$T/empty"
"$ATF" record -o "$T/empty" -- "$TARGETS/call_chain" 1 >/dev/null 2>&1 || fail "-o into an empty directory"
! "$ATF" record -o "$T/empty" -- "$TARGETS/call_chain" 1 >/dev/null 2>&1 || fail "-o into a session again, without --force"
"$ATF" record --force -o "$T/empty" -- "$TARGETS/call_chain" 1 >/dev/null 2>&1 || fail "-o into a session again, with --force"
assert_eq 1 "$(ls -d "$T/empty"/pid_* | wc -l)" "--force replaced the earlier session: one process"
echo "ok"
