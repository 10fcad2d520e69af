#!/usr/bin/env bash
# What users tripped over, each checked as they met it: list-functions' header and _start;
# info's pid and durations; counts and plurals; names from the target escaped for the terminal
# (info, dump, report, graph, list-functions); the time syntax; attach with options after the
# pid; record's exit code for a target killed by a signal; -f naming nothing.
source "$(dirname "$0")/lib.sh"
GEN=$TOOLS/gen_session
export LC_ALL=C
ESC=$(printf '\033')

# ---- list-functions: a header, and _start shown as record treats it ---------------------------
"$ATF" list-functions "$TARGETS/report_mix" >"$T/lf" || fail "list-functions"
assert_eq "  ADDRESS            PROBE-OFF  ORIGIN         SIZE INSN                 ENTRY            STATUS      FUNCTION" \
	"$(sed -n 2p "$T/lf")" "list-functions header line"
assert_contains "$T/lf" ' entry-point +_start$' "_start: not selected, said why"
! grep -q ' selected +_start$' "$T/lf" || fail "_start listed as selected"
assert_contains "$T/lf" '^trampolines: 1 function would be entered through one$' "one function, singular"
assert_contains "$T/lf" '^summary: 6 selected, .* 1 entry-point$' "summary counts the entry point"

# ---- names from the target escaped: an OSC title and a clear-screen in the manifest ------------
"$GEN" -o "$T/g" --threads 1 --calls 3 --depth 2 --seed 1 >/dev/null || fail "gen_session"
jq --arg e "$ESC" '.process_name = ($e + "]0;owned" + "\u0007") | .argv[1] = ($e + "[2J" + $e + "[H")
	| .threads[0].name = ("t" + $e + "[31m") | .symbols[0].name = ("ma" + $e + "[8min")' \
	"$T/g/manifest.json" >"$T/m" && mv "$T/m" "$T/g/manifest.json"
for cmd in info dump report graph; do
	"$ATF" $cmd "$T/g" >"$T/$cmd.out" 2>&1 || fail "$cmd of the session with control characters"
	! grep -q "$ESC" "$T/$cmd.out" || fail "$cmd printed a raw escape character"
done
assert_contains "$T/info.out" '^process: +\\x1b\]0;owned\\x07$' "info: the process name escaped"
assert_contains "$T/info.out" '^argv: +gen_target \\x1b\[2J\\x1b\[H ' "info: argv escaped"
assert_contains "$T/info.out" 'name=t\\x1b\[31m ' "info: the thread name escaped"
assert_contains "$T/dump.out" '^# thread_0 tid=4242 name=t\\x1b\[31m events=' "dump: the thread name escaped"
assert_contains "$T/dump.out" '\| ma\\x1b\[8min\(\) \{$' "dump: a function name escaped"
assert_contains "$T/report.out" '  ma\\x1b\[8min$' "report: a function name escaped"
assert_contains "$T/graph.out" ' ma\\x1b\[8min$' "graph: a function name escaped"

# ---- C++ names: demangled by default, --demangle=simple without parameters, --no-demangle raw ---
assert_contains <("$ATF" dump "$T/g") '\| +foo::Bar::method\(int\) \{$' "dump: demangled by default"
assert_contains <("$ATF" dump "$T/g" --demangle=simple) '\| +foo::Bar::method\(\) \{$' "dump --demangle=simple"
assert_contains <("$ATF" report "$T/g" --no-demangle) '  _ZN3foo3Bar6methodEi$' "report --no-demangle"
assert_contains <("$ATF" report "$T/g" --demangle no) '  _ZN3foo3Bar6methodEi$' "report --demangle no"
assert_contains <("$ATF" graph "$T/g" --demangle simple) '─foo::Bar::method$' "graph --demangle simple"
"$ATF" export "$T/g" -F folded -o "$T/g.folded" --demangle=simple
grep -q ';foo::Bar::method ' "$T/g.folded" || fail "folded --demangle=simple"
rc=0; "$ATF" report "$T/g" --demangle=short 2>/dev/null || rc=$?
assert_eq 2 "$rc" "--demangle short refused"

# ---- info: no ns_pid for a host process, durations in human units ------------------------------
assert_contains "$T/info.out" '^pid: +4242$' "info pid of a host process"
assert_contains "$T/info.out" '^time: +[0-9]+\.\.[0-9]+ ns \(20\.347 us, clock 3\)$' "info: the session's length"
assert_contains "$T/info.out" ' duration=19\.347 us ' "info: a thread's length"
jq '.ns_pid = 7' "$T/g/manifest.json" >"$T/m" && mv "$T/m" "$T/g/manifest.json"
assert_contains <("$ATF" info "$T/g") '^pid: +4242 \(7 in its pid namespace\)$' "info pid of a process in a container"

# ---- report: "2 of 11 functions", "1 function" -----------------------------------------------
n=$("$ATF" report "$T/g" --csv | tail -n +2 | wc -l)
assert_contains <("$ATF" report "$T/g" --limit 2) "^# $T/g: traced time [0-9.]+ [mun]?s, 2 of $n functions, sorted by total\$" "--limit header"
assert_contains <("$ATF" report "$T/g") "^# $T/g: traced time [0-9.]+ [mun]?s, $n functions, sorted" "header without --limit"

# ---- the time syntax: 20µs and 1m30s ---------------------------------------------------------
assert_eq "$("$ATF" dump "$T/g" --from 2us --to 9us)" "$("$ATF" dump "$T/g" --from 2µs --to 0s9000ns 2>&1)" "2µs, 0s9000ns"
# ---- --from past the end: one line with the session's length, exit 1 ------------------------------
rc=0; "$ATF" report "$T/g" --from 1m30s >"$T/past.out" 2>"$T/past.err" || rc=$?
assert_eq 1 "$rc" "report --from past the end"
assert_eq "atftrace report: --from 90.000 s is past the end of $T/g: it lasts 20.347 us" "$(cat "$T/past.err")" "its note (1m30s = 90 s)"
assert_eq "" "$(cat "$T/past.out")" "no empty report"
for cmd in dump graph "export -F chrome -o $T/past.json"; do
	rc=0; "$ATF" $cmd "$T/g" --from 20348ns >/dev/null 2>"$T/past.err" || rc=$?
	assert_eq 1 "$rc" "$cmd --from past the end"
	assert_contains "$T/past.err" "--from 20\.348 us is past the end of $T/g: it lasts 20\.347 us$" "$cmd: its note"
done
"$ATF" report "$T/g" --from 20347ns >/dev/null || fail "--from at the last event is inside the session"

# ---- a stripped file of a Debian package: which archive has its -dbgsym, and debuginfod ------
"$ATF" list-functions /bin/sh >/dev/null 2>"$T/sh.err" || fail "list-functions /bin/sh"
if grep -q 'stripped, and no debug file' "$T/sh.err" && dpkg-query -S /bin/sh >/dev/null 2>&1; then
	assert_contains "$T/sh.err" '^atftrace list-functions: hint: its symbols are in the package dash-dbgsym, from Debian.s debug archive \(deb http://deb\.debian\.org/debian-debug [a-z]+-debug main\); or let atftrace fetch them: export DEBUGINFOD_URLS=https://debuginfod\.debian\.net$' \
		"the -dbgsym hint (dpkg-query's diversion lines skipped)"
fi

need_bpf
# ---- attach: options after the pid ----------------------------------------------------------
mkfifo "$T/loop.cmd"
exec 5<>"$T/loop.cmd"
"$TARGETS/attach_loop" "$T/loop.cmd" >/dev/null 2>&1 &
LOOP=$!
trap 'kill $LOOP 2>/dev/null || true; wait $LOOP 2>/dev/null || true; rm -rf "$T"' EXIT
"$ATF" attach "$LOOP" --duration 0.3 -o "$T/att" -f main >/dev/null 2>"$T/att.err" || { cat "$T/att.err" >&2; fail "attach PID --duration"; }
assert_contains "$T/att.err" "^atftrace record: .*ended by duration; output in $T/att\$" "attach PID OPTIONS: ended by --duration"
rc=0; "$ATF" attach "$LOOP" /bin/true 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "attach PID CMD refused"
kill $LOOP; wait $LOOP 2>/dev/null || true

# ---- record: a target killed by a signal exits 128 + its number --------------------------------
rc=0; "$ATF" record -o "$T/segv" -- /bin/sh -c 'kill -SEGV $$' >/dev/null 2>"$T/segv.err" || rc=$?
assert_eq 139 "$rc" "record of a target killed by SIGSEGV"
assert_contains "$T/segv.err" '^atftrace record: the target was killed by signal 11 \(SIGSEGV: Segmentation fault\); exit status 139$' "its reason"
# ---- report of a session with one function: "1 function" -------------------------------------
"$ATF" record -o "$T/one" -f tiny -- "$TARGETS/report_mix" >/dev/null 2>&1 || fail "record -f tiny"
assert_contains <("$ATF" report "$T/one") "^# $T/one: traced time [0-9.]+ [mun]?s, 1 function, sorted by total\$" "1 function"

# ---- -f naming no function: refused with the closest names, unless --allow-missing ------------
rc=0; "$ATF" record -o "$T/miss" -f main -f drivr -- "$TARGETS/report_mix" >/dev/null 2>"$T/miss.err" || rc=$?
assert_eq 1 "$rc" "record -f drivr (misspelt)"
assert_eq "atftrace record: -f drivr: $TARGETS/report_mix has no function of that name; closest: driver (if it execs a program that has it, add --allow-missing)" \
	"$(cat "$T/miss.err")" "its one line"
[ ! -e "$T/miss" ] || fail "a refused record created its session"
rc=0; "$ATF" record -o "$T/miss2" -f 'libc.so.6:mallocc' -- "$TARGETS/report_mix" >/dev/null 2>"$T/miss2.err" || rc=$?
assert_eq 1 "$rc" "record -f libc.so.6:mallocc"
assert_contains "$T/miss2.err" "^atftrace record: -f mallocc: .*libc\\.so\\.6 has no function of that name; closest: malloc, " "closest names in a library"
"$ATF" record -o "$T/miss3" --allow-missing -f main -f drivr -- "$TARGETS/report_mix" >/dev/null 2>&1 || fail "--allow-missing"
assert_eq 1 "$("$ATF" report "$T/miss3" --csv | tail -n +2 | wc -l)" "--allow-missing: main alone traced"
# a library the target has not loaded yet may have it: accepted, and said in plain words
"$ATF" record -o "$T/later" -f 'libnotloaded.so:foo' -- "$TARGETS/report_mix" >/dev/null 2>"$T/later.err" || fail "-f of a library not loaded"
assert_contains "$T/later.err" "^atftrace record: launched [0-9]+: no function attached yet: libnotloaded\\.so is attached when loaded; recording to $T/later\$" "no function yet, in plain words"

# ---- report --by process: each process's table, the same as its --pid report ---------------------
"$ATF" record --follow-fork -o "$T/ff" -f child_work -f parent_work -- "$TARGETS/fork_exec" 3 2 >/dev/null 2>&1 ||
	fail "record --follow-fork"
"$ATF" report "$T/ff" --by process --csv >"$T/by.csv"
assert_eq "pid,process,function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,share_percent,unwound,open_at_end" \
	"$(head -1 "$T/by.csv")" "--by process: CSV header"
pids=$(cd "$T/ff" && ls -d pid_* | sed 's/pid_//' | sort -n)
assert_eq 2 "$(echo "$pids" | wc -l)" "processes recorded"
for p in $pids; do
	comm=$(jq -r .process_name "$T/ff/pid_$p/manifest.json")
	assert_eq "$("$ATF" report "$T/ff" --pid "$p" --csv | tail -n +2 | sed "s/^/$p,\"$comm\",/")" \
		"$(grep "^$p," "$T/by.csv")" "--by process: the rows of $p are its --pid report's"
done
assert_eq "child_work,3 parent_work,2" "$(cut -d, -f3,4 "$T/by.csv" | tail -n +2 | tr -d '"' | sort | tr '\n' ' ' | sed 's/ $//')" \
	"--by process: each function in its own process"
"$ATF" report "$T/ff" --by process >"$T/by.txt"
assert_eq "$(for p in $pids; do echo "## $(jq -r .process_name "$T/ff/pid_$p/manifest.json") [$p]"; done)" \
	"$(grep '^## ' "$T/by.txt")" "--by process: a heading per process, in pid order"
assert_eq "$pids" "$("$ATF" report "$T/ff" --by process --json | jq -r '.processes[].pid')" "--by process --json"
rc=0; "$ATF" report "$T/ff" --by thread 2>/dev/null || rc=$?
assert_eq 2 "$rc" "--by thread refused"

# ---- names as the user asked for them: an alias (malloc is __libc_malloc) and an ifunc (strlen
# runs as one of its implementations) are found by graph and dump under the name given ----------
mkfifo "$T/libc.cmd"
exec 6<>"$T/libc.cmd"
printf 'm 2\ns 3\nq\n' >&6
"$ATF" record -o "$T/libc" -f libc.so.6:malloc -f libc.so.6:strlen -f main -- "$TARGETS/calls_libc" loop "$T/libc.cmd" \
	>/dev/null 2>"$T/libc.err" || { cat "$T/libc.err" >&2; fail "record malloc and strlen"; }
exec 6>&-
man=$(echo "$T"/libc/pid_*/manifest.json)
malloc_sym=$(jq -r '.symbols[] | select((.aliases // []) | index("malloc")) | .name' "$man")
strlen_sym=$(jq -r '.symbols[] | select((.aliases // []) | index("strlen")) | .name' "$man")
[ -n "$malloc_sym" ] && [ "$malloc_sym" != malloc ] || fail "the manifest has no symbol aliased malloc: $(jq -c '.symbols' "$man")"
[ -n "$strlen_sym" ] && [ "$strlen_sym" != strlen ] || fail "the manifest has no symbol aliased strlen"
"$ATF" graph "$T/libc" malloc >"$T/g.malloc" 2>"$T/g.malloc.err" || fail "graph SESSION malloc: $(cat "$T/g.malloc.err")"
assert_eq "atftrace graph: malloc: recorded as $malloc_sym (another name of the same function)" "$(cat "$T/g.malloc.err")" "graph says which name it chose"
n_malloc=$("$ATF" report "$T/libc" --csv | awk -F, -v f="\"$malloc_sym\"" '$1 == f { print $2 }')
[ "${n_malloc:-0}" -ge 2 ] || fail "malloc called $n_malloc times, expected 2 or more"
assert_contains "$T/g.malloc" "^ +[0-9.]+ [mun]?s +[0-9.]+ [mun]?s +$n_malloc  $malloc_sym\$" "graph below malloc: its calls"
"$ATF" graph "$T/libc" 'strlen@@GLIBC_2.2.5' --callers >"$T/g.strlen" 2>/dev/null || fail "graph of strlen by its versioned name"
assert_contains "$T/g.strlen" "^ +[0-9.]+ [mun]?s +3  $strlen_sym\$" "graph --callers of strlen: its 3 calls"
assert_eq 3 "$("$ATF" dump "$T/libc" -F strlen | grep -c "| $strlen_sym();")" "dump -F strlen"
assert_eq 0 "$("$ATF" dump "$T/libc" -N strlen | grep -c "$strlen_sym")" "dump -N strlen"

echo "ok: papercuts"
