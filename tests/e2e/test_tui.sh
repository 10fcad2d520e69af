#!/usr/bin/env bash
# atftrace tui on real recordings, driven in a detached tmux pane of a fixed size: keys are sent
# with send-keys and the screen read back with capture-pane, polled until the expected text shows.
# nest_sleep (tests/targets/nest_sleep.c) has known nesting: the report's calls, the graph's
# nodes collapsed and expanded, search, the jump from a report line to its function's graph,
# and its timeline's calls are checked exactly; threads (2 threads of 3 calls) checks the
# timeline's threads and thread switching. Then: a name with control characters shown escaped,
# a range past the session's end refused, a tiny terminal and a resize, and SESSION input it
# must refuse.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v tmux >/dev/null || fail "needs tmux (scripts/deps.sh installs it)"

# the ASan build when there is one: a memory error in the screen code fails the test
TUI=$ATF
[ -x "$ATF_ASAN" ] && TUI=$ATF_ASAN
SOCK=$T/tmux.sock
tm() { tmux -S "$SOCK" -f /dev/null "$@"; }
trap 'tm kill-server >/dev/null 2>&1 || true; rm -rf "$T"' EXIT

# ---- refused before the terminal is touched: one line, non-zero exit ------------------------
refused() {   # WHAT PATTERN ARGS...
	local what=$1 pat=$2 rc=0
	shift 2
	"$ATF" tui "$@" </dev/null >"$T/out" 2>"$T/err" || rc=$?
	[ $rc -ne 0 ] || fail "$what: exit 0"
	assert_eq 1 "$(wc -l <"$T/err")" "$what: error lines"
	assert_eq 0 "$(wc -c <"$T/out")" "$what: bytes on stdout (a screen was started)"
	assert_contains "$T/err" "$pat" "$what"
}
mkdir "$T/notsession"
refused "a directory that is no session" '^atftrace tui: .*/notsession: not a session' "$T/notsession"
refused "a missing path" '^atftrace tui: .*/missing: No such file or directory$' "$T/missing"
refused "a file" '^atftrace tui: /etc/hostname: ' /etc/hostname

"$ATF" record -o "$T/s" -- "$TARGETS/nest_sleep" >/dev/null 2>"$T/rec.err" || { cat "$T/rec.err" >&2; fail "record nest_sleep"; }
"$ATF" record -o "$T/th" -- "$TARGETS/threads" 2 3 >/dev/null 2>"$T/rec.err" || { cat "$T/rec.err" >&2; fail "record threads"; }
refused "standard input not a terminal" '^atftrace tui: standard input and output: not a terminal' "$T/s"

# ---- the pane ---------------------------------------------------------------------------------
start() {   # SESSION [OPTIONS]: the tui in a fresh 120x24 pane; its exit status goes to $T/rc
	rm -f "$T/rc"
	tm kill-server >/dev/null 2>&1 || true
	tm new-session -d -s tui -x 120 -y 24 \
		"env LANG=C.UTF-8 TERM=screen $(printf '%q ' "$TUI" tui "$@") 2>'$T/tui.err'; echo \$? >'$T/rc'"
}
keys() { tm send-keys -t tui "$@"; }
pane() { tm capture-pane -p -t tui | sed 's/ *$//'; }
# wait_for PATTERN WHAT: poll the pane (10 s at most) until a line matches PATTERN (grep -E)
wait_for() {
	local deadline=$((SECONDS + 10))
	while :; do
		pane >"$T/pane" 2>/dev/null || true
		grep -qE -- "$1" "$T/pane" && return 0
		[ $SECONDS -lt $deadline ] || { sed 's/^/  | /' "$T/pane" >&2; cat "$T/tui.err" >&2 2>/dev/null; fail "$2: no line matching '$1'"; }
		sleep 0.05
	done
}
# body COLS: the lines below the two title lines, less the status line, cut to columns COLS
body() { sed -n '3,$p' "$T/pane" | sed '$d' | sed '/^$/d' | cut -c"$1"; }
# expect_re COLS WHAT RE...: poll (10 s at most) until the body (columns COLS) is exactly one
# line per RE, each matching its RE (grep -E, anchored)
expect_re() {
	local cols=$1 what=$2 deadline=$((SECONDS + 10)) ok i line
	shift 2
	while :; do
		pane >"$T/pane" 2>/dev/null || true
		body "$cols" >"$T/body"
		ok=1
		[ "$(wc -l <"$T/body")" -eq $# ] || ok=0
		i=1
		for re in "$@"; do
			line=$(sed -n "${i}p" "$T/body")
			grep -qE -- "^$re\$" <<<"$line" || ok=0
			i=$((i + 1))
		done
		[ $ok = 1 ] && return 0
		[ $SECONDS -lt $deadline ] || {
			printf 'expected:\n' >&2; printf '  %s\n' "$@" >&2; echo "got:" >&2
			sed 's/^/  | /' "$T/pane" >&2; fail "$what"; }
		sleep 0.05
	done
}
lit() { sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$1"; }   # a literal line as an ERE
# expect COLS WHAT LINES...: the body (columns COLS) is exactly LINES
expect() {
	local cols=$1 what=$2 res=() l
	shift 2
	for l in "$@"; do res+=("$(lit "$l")"); done
	expect_re "$cols" "$what" "${res[@]}"
}
quit() {   # q exits with status 0
	local deadline=$((SECONDS + 10))
	keys q
	while [ ! -s "$T/rc" ]; do
		[ $SECONDS -lt $deadline ] || fail "q: the tui did not exit"
		sleep 0.05
	done
	assert_eq 0 "$(cat "$T/rc")" "exit status after q"
	[ ! -s "$T/tui.err" ] || { cat "$T/tui.err" >&2; fail "the tui wrote to stderr"; }
}

# ---- report -------------------------------------------------------------------------------------
# columns: Total 1-11, Self 13-23, Calls 25-33, Average 35-45, Max 47-57, Function from 60
start "$T/s"
wait_for '^Report: .*/s: 6 functions, sorted by total$' "report title"
expect 25-33,59- "report rows by total (calls, function)" \
	"        1 main" "        1 run" "        2 outer" "        8 nap" "        6 inner" "        2 leaf"
assert_eq "main,1 run,1 outer,2 nap,8 inner,6 leaf,2" \
	"$("$ATF" report "$T/s" --csv | tail -n +2 | cut -d, -f1,2 | tr -d '"' | tr '\n' ' ' | sed 's/ $//')" \
	"report's own rows, in the same order"
keys s s
wait_for 'sorted by calls$' "s s: sorted by calls"
expect 25-33,59- "report rows by calls" \
	"        8 nap" "        6 inner" "        2 leaf" "        2 outer" "        1 main" "        1 run"
keys S
wait_for 'sorted by self$' "S: back to sorted by self"
keys s

# search: the cursor (the status line's [line/lines]) goes to the match
keys / z z z Enter
wait_for '^not found: zzz$' "/zzz: not found"
keys / i n n e r Enter
wait_for '^\[2/6\]' "/inner: on line 2"
keys End
wait_for '^\[6/6\]' "End"
keys n
wait_for '^\[2/6\]' "n: inner again, wrapping around"

# Enter on a report line: its function's graph
keys Enter
wait_for '^Graph: .*/s: call graph below inner$' "Enter on inner: its graph"
# graph columns: Total 1-11, Self 13-23, Calls 25-33, tree and function from 36
expect 25- "graph below inner" "        6  [-] inner" "        6  └─nap"

# ---- graph: collapse, expand, search, g ---------------------------------------------------------
full=("        1  [-] main" "        1  └─[-] run" "        2    └─[-] outer" "        6      ├─[-] inner"
      "        6      │ └─nap" "        2      ├─nap" "        2      └─leaf")
keys G
wait_for '^Graph: .*/s: call graph below every root$' "G: the full graph"
expect 25- "the full graph, expanded" "${full[@]}"
keys Down Down
wait_for '^\[3/7\]' "on outer"
keys Enter
expect 25- "outer collapsed" "        1  [-] main" "        1  └─[-] run" "        2    └─[+] outer"
keys Enter
expect 25- "outer expanded: its children and their calls" "${full[@]}"
keys Left
expect 25- "Left: outer collapsed" "        1  [-] main" "        1  └─[-] run" "        2    └─[+] outer"
keys Left
wait_for '^\[2/3\]' "Left on a collapsed node: its parent"
keys Down Right
expect 25- "Right: outer expanded" "${full[@]}"
keys C
expect 25- "C: everything collapsed" "        1  [+] main"
# search opens the collapsed nodes above the match
keys / n a p Enter
expect 25- "/nap: the path to it opened" "${full[@]}"
wait_for '^\[5/7\]' "/nap: on the nap below inner"
keys n
wait_for '^\[6/7\]' "n: the nap below outer"
keys N
wait_for '^\[5/7\]' "N: back to the nap below inner"
keys i
wait_for '^nap \(depth 4\): 6 calls, total .*, 0 unwound, 0 open$' "i: the node's counts"
keys g
wait_for '^Graph: .*/s: call graph below nap$' "g: the graph below nap"
expect 25- "graph below nap" "        8  nap"

# ---- timeline -----------------------------------------------------------------------------------
keys T
wait_for '^Timeline: .*/s: 1 thread, calls in time order$' "T: timeline"
wait_for '  \[\+\] thread_0 tid=[0-9]+ name=nest_sleep  40 events  \|#+\|$' "the thread's line"
keys Enter
calls=("main" "  run" "    outer" "      inner" "        nap" "      inner" "        nap" "      inner" "        nap"
       "      leaf" "      nap" "    outer" "      inner" "        nap" "      inner" "        nap" "      inner"
       "        nap" "      leaf" "      nap")
res=(".*\\[-\\] thread_0 tid=[0-9]+ name=nest_sleep  40 events  \\|#+\\|")
for c in "${calls[@]}"; do res+=("$(lit "  $c")"); done
expect_re 26- "the thread's calls in time order, by depth" "${res[@]}"
keys Down i
wait_for '^main: called at 0 ns, depth 0, returned after .* in thread_0 tid=[0-9]+ name=nest_sleep$' "i on main"
quit

# ---- timeline of threads: each thread, and t/Tab to switch --------------------------------------
start "$T/th"
wait_for '^Report: ' "threads: report"
expect 25-33,59- "threads: report" "        1 main" "        2 thread_main" "        6 thread_work"
keys T
wait_for '^Timeline: .*/th: 3 threads' "threads: timeline"
thread_re() { echo "\\[$1\\] thread_$2 tid=[0-9]+ name=threads  $3 events  \\|[#.]+\\|"; }
expect_re 26- "three threads" "$(thread_re "\\+" 0 2)" "$(thread_re "\\+" 1 8)" "$(thread_re "\\+" 2 8)"
keys t
wait_for '^\[2/3\]' "t: the next thread"
keys Enter
expect_re 26- "thread_1 expanded" "$(thread_re "\\+" 0 2)" "$(thread_re - 1 8)" "  thread_main" "    thread_work" \
	"    thread_work" "    thread_work" "$(thread_re "\\+" 2 8)"
keys Tab
wait_for '^\[7/7\]' "Tab: thread_2"
keys BTab
wait_for '^\[2/7\]' "Shift-Tab: back to thread_1"
keys I
wait_for '^threads: +3$' "I: session info"
keys h
wait_for '^Help: atftrace tui keys$' "h: help"
keys x
wait_for '^Timeline: ' "a key leaves the help"
quit

# ---- a name with control characters, C1 and bytes that are not UTF-8: escaped -------------------
cp -r "$T/s" "$T/odd"
m=$(echo "$T"/odd/pid_*/manifest.json)
hex=$(printf 'le\033[2J\302\233af\377' | od -An -tx1 | tr -d ' \n')
jq --arg h "$hex" '(.symbols[] | select(.name == "leaf")) |= (.name = "le?af" | .name_hex = $h)' "$m" >"$m.new"
mv "$m.new" "$m"
start "$T/odd"
wait_for '  le\\x1b\[2J\\u009baf\\xff$' "the odd name, escaped"
keys G
wait_for '└─le\\x1b\[2J\\u009baf\\xff$' "the odd name in the graph, escaped"
quit

# ---- a range past the end is refused as by every reader; a tiny terminal; a resize ------------
refused "a range past the session's end" '^atftrace tui: --from 3600\.000 s is past the end of .*: it lasts [0-9.]+ [mun]?s$' \
	"$T/s" --from 1h
start "$T/s"
wait_for '^Report: ' "report"
keys T
wait_for '^Timeline: ' "timeline"
tm resize-window -t tui -x 12 -y 3
wait_for '^too small$' "a 12x3 terminal"
keys j k Enter
tm resize-window -t tui -x 120 -y 24
wait_for '^Timeline: ' "resized back"
quit
echo "tui: ok"
