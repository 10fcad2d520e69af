#!/usr/bin/env bash
# A container's paths are resolved inside its root, never on the host. Inside the root of a
# "container" (pid and mount namespaces, chroot) running attach_loop as /app:
#   /usr/bin/env   a hard link to /app (so probes on it fire in the container's process)
#   /alias   -> /usr/bin/env                       inside: the container's app; on the host: env
#   /evil    -> /etc/passwd                        inside: missing;  on the host: a real file
#   /escape  -> ../../../../../../../../etc/passwd  ".." stops at the container's root
#   /bad.so     a truncated ELF file               untrusted input: an error, not a crash
# `record -p PID -f PATH:GLOB` must probe the container's file for /alias (exact calls), refuse
# /evil and /escape as missing inside the root (never "not an ELF", which would mean the host's
# /etc/passwd was read), and report /bad.so as malformed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_container.sh"
need_bpf
command -v unshare >/dev/null && command -v chroot >/dev/null || fail "needs unshare and chroot (scripts/deps.sh installs util-linux)"
V2=$(cgroup_v2_root)
CG=$V2/atftrace-symlink-$$
cleanup() {
	quit_app box
	wait 2>/dev/null
	[ -d "$CG" ] && rmdir "$CG"
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$CG"

R=$T/root
make_root "$R"
mkdir -p "$R/usr/bin"
ln "$R/app" "$R/usr/bin/env"
ln -s /usr/bin/env "$R/alias"
ln -s /etc/passwd "$R/evil"
ln -s ../../../../../../../../etc/passwd "$R/escape"
head -c 3000 "$R/app" >"$R/bad.so"
[ -e /etc/passwd ] && [ -x /usr/bin/env ] || fail "needs /etc/passwd and /usr/bin/env on the host"
start_contained box "$R" "$CG"
BOX=${PID[box]}

# ---- /alias resolves inside the root: the container's app, with exact calls ---------------------
start_recorder "$T/alias" -p "$BOX" -f /alias:loop_work
run_app box 4
stop_recorder
assert_contains "$T/rec.err" "attached to $BOX: 1 function in 1 module" "what was probed for /alias"
"$TOOLS/record_stats" "$T/alias" >"$T/stats"
assert_eq 4 "$(calls_of "$T/stats" "$BOX")" "calls through /alias"
assert_eq "/alias" "$(jq -r '.modules[0].path' "$T/alias/pid_$BOX/manifest.json")" "module as the container names it"
"$ATF" verify "$T/alias" >/dev/null || fail "verify the /alias session"

# list-functions reads the same file: the container's loop_work, selected
"$ATF" list-functions -p "$BOX" -f /alias:loop_work --selected >"$T/lf" 2>"$T/lf.err" || { cat "$T/lf.err" >&2; fail "list-functions /alias"; }
assert_contains "$T/lf" " selected +loop_work$" "list-functions shows the container's loop_work"
assert_contains "$T/lf" "^summary: 1 selected" "list-functions selects one function"

# ---- a library by name: the mapped file, through /proc/PID/map_files (fflush's symbol may be the
# alias _IO_fflush) ----------------------------------------------------------------------------
start_recorder "$T/lib" -p "$BOX" -f libc.so.6:fflush
run_app box 2
run_app box 1
stop_recorder
"$TOOLS/record_stats" "$T/lib" >"$T/stats"
assert_eq 2 "$(awk -v p="$BOX" '$1 == "call" && $2 == p && ($3 == "fflush" || $3 == "_IO_fflush") { print $4 }' "$T/stats")" "fflush calls in the container's libc"
case $(jq -r '.modules[0].path' "$T/lib/pid_$BOX/manifest.json") in
*/libc.so.6) ;;
*) fail "libc module path: $(jq -r '.modules[0].path' "$T/lib/pid_$BOX/manifest.json")" ;;
esac

# ---- symlinks that lead out of the root are refused -------------------------------------------
for link in evil escape; do
	"$ATF" record -p "$BOX" -f "/$link:*" -o "$T/$link" --duration 1 2>"$T/err" && fail "/$link was probed"
	assert_contains "$T/err" "^atftrace record: /$link: cannot open it inside the root of process $BOX: No such file or directory" "/$link refused"
	if grep -q "ELF" "$T/err"; then fail "/$link: a host file was read: $(cat "$T/err")"; fi
	if [ -e "$T/$link" ]; then fail "/$link: a session was created"; fi
	if "$ATF" list-functions -p "$BOX" -f "/$link:*" >"$T/lf" 2>"$T/err"; then fail "list-functions read /$link"; fi
	assert_contains "$T/err" "^atftrace list-functions: /$link: cannot open it inside the root of process $BOX" "list-functions refuses /$link"
done

# ---- a malformed ELF file from the container: one clear error, no crash (ASan build) ---------------
bin=$ATF
[ -x "$ATF_ASAN" ] && bin=$ATF_ASAN
rc=0
"$bin" record -p "$BOX" -f "/bad.so:*" -o "$T/bad" --duration 1 2>"$T/err" || rc=$?
[ $rc -eq 1 ] || { cat "$T/err" >&2; fail "malformed ELF: exit $rc"; }
assert_contains "$T/err" "^atftrace: /bad.so: " "malformed ELF named"
assert_contains "$T/err" "^atftrace record: /bad.so: cannot read symbols: " "malformed ELF refused"
if grep -qE "AddressSanitizer|runtime error" "$T/err"; then fail "malformed ELF: sanitizer report"; fi
echo ok
