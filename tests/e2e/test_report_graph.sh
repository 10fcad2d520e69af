#!/usr/bin/env bash
# report, graph and dump's filters on a real recording of a target with known nesting and sleeps
# (tests/targets/nest_sleep.c), checked against durations this test computes itself from the
# plain `dump` lines; the one time syntax on their options; ranged exports of the recording
# balanced in chrome, speedscope, folded and Perfetto.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v jq >/dev/null || fail "needs jq (scripts/deps.sh installs it)"
command -v protoc >/dev/null || fail "needs protoc (scripts/deps.sh installs protobuf-compiler)"

"$ATF" record -o "$T/s" -- "$TARGETS/nest_sleep" >/dev/null 2>"$T/rec.err" || { cat "$T/rec.err" >&2; fail "record"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify"

# ---- the reference: every call's duration and self time, from dump's lines -----------------
# dump prints "TIME [DURATION] | <2 spaces per level>body"; a body is "f() {", "f();" or "} /* f */".
"$ATF" dump "$T/s" >"$T/dump"
awk 'function ns(v, u) { return v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }
     /^#/ { next }
     { bar = index($0, "| "); head = substr($0, 1, bar - 1); body = substr($0, bar + 2)
       n = split(head, h, " "); dur = n == 4 ? ns(h[3], h[4]) : -1
       match(body, /^ */); level = RLENGTH / 2; body = substr(body, RLENGTH + 1) }
     body ~ /\(\) \{$/ { name = body; sub(/\(\) \{$/, "", name); stack[level] = name; child[level] = 0; next }
     { if (body ~ /\(\);$/) { name = body; sub(/\(\);$/, "", name); kids = 0 }
       else { name = stack[level]; kids = child[level] }
       path = ""; for (i = 0; i < level; i++) path = path stack[i] ";"
       printf "%s\t%s%s\t%.0f\t%.0f\n", name, path, name, dur, dur - kids
       if (level > 0) child[level - 1] += dur }' "$T/dump" >"$T/calls"     # name path dur self
assert_eq 20 "$(wc -l <"$T/calls")" "calls in the dump"
# per function: calls total self min max (no recursion in nest_sleep: total is the plain sum)
awk -F '\t' '{ c[$1]++; t[$1] += $3; s[$1] += $4; if (!($1 in mn) || $3 < mn[$1]) mn[$1] = $3; if ($3 > mx[$1]) mx[$1] = $3 }
	END { for (f in c) printf "%s %d %.0f %.0f %.0f %.0f\n", f, c[f], t[f], s[f], mn[f], mx[f] }' "$T/calls" | sort >"$T/want"

# known nesting and sleeps
want() { awk -v f="$1" -v k="$2" '$1 == f { print $k }' "$T/want"; }
assert_eq "inner leaf main nap outer run" "$(cut -d' ' -f1 "$T/want" | tr '\n' ' ' | sed 's/ $//')" "functions"
assert_eq "1 1 2 6 8 2" "$(for f in main run outer inner nap leaf; do want $f 2; done | tr '\n' ' ' | sed 's/ $//')" "calls"
[ "$(want nap 3)" -ge 20000000 ] || fail "nap slept $(want nap 3) ns in all, less than 8 naps of 2 or 4 ms"
[ "$(want nap 5)" -ge 2000000 ] && [ "$(want nap 6)" -ge 4000000 ] || fail "nap's min or max below its sleeps"

# close VALUE WANT TOLERANCE WHAT: |VALUE - WANT| <= TOLERANCE (dump prints 3 decimals of a unit)
close() {
	awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(d <= t && -d <= t) }' ||
		fail "$4: $1, expected $2 (within $3)"
}

# ---- report against the reference ---------------------------------------------------------
"$ATF" report "$T/s" --csv >"$T/report.csv"
assert_eq "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,share_percent,unwound,open_at_end" \
	"$(head -1 "$T/report.csv")" "CSV header"
tail -n +2 "$T/report.csv" | tr -d '"' | tr ',' ' ' | sort >"$T/got"
assert_eq 6 "$(wc -l <"$T/got")" "report rows"
while read -r f calls total self avg min max share unw open; do
	assert_eq "$(want "$f" 2)" "$calls" "report calls of $f"
	tol=$((calls * 2000))           # each duration printed to 1 us or better: 0.5 us apiece
	close "$total" "$(want "$f" 3)" $tol "report total of $f"
	close "$self" "$(want "$f" 4)" $((tol * 4)) "report self of $f"
	close "$min" "$(want "$f" 5)" 1000 "report min of $f"
	close "$max" "$(want "$f" 6)" 1000 "report max of $f"
	assert_eq $((total / calls)) "$avg" "report average of $f"
	assert_eq "0 0" "$unw $open" "unwound and open calls of $f"
done <"$T/got"
main_total=$(awk '$1 == "main" { print $3 }' "$T/got")
assert_eq "100.0000" "$(awk '$1 == "main" { print $8 }' "$T/got")" "main's share"

# sorting, --limit, --json, the text form
assert_eq "nap inner" "$("$ATF" report "$T/s" -s calls --limit 2 --csv | tail -n +2 | cut -d, -f1 | tr -d '"' | tr '\n' ' ' | sed 's/ $//')" \
	"-s calls --limit 2"
assert_eq "inner leaf main nap outer run" "$("$ATF" report "$T/s" -s name --csv | tail -n +2 | cut -d, -f1 | tr -d '"' | tr '\n' ' ' | sed 's/ $//')" "-s name"
assert_eq "nap" "$("$ATF" report "$T/s" -s self --csv | sed -n 2p | cut -d, -f1 | tr -d '"')" "-s self: most self time first"
"$ATF" report "$T/s" --json >"$T/report.json"
assert_eq "$(tail -n +2 "$T/report.csv" | cut -d, -f1-4 | tr -d '"' | sort)" \
	"$(jq -r '.functions[] | "\(.function),\(.calls),\(.total_ns),\(.self_ns)"' "$T/report.json" | sort)" "--json and --csv agree"
assert_eq "$main_total" "$(jq .traced_ns "$T/report.json")" "traced time is main's"
"$ATF" report "$T/s" >"$T/report.txt"
assert_contains "$T/report.txt" '^ +[0-9.]+ ms +[0-9.]+ ms +8 +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+%  nap$' "text row of nap"

# ---- graph against the reference -------------------------------------------------------------
# per call path: calls total self
awk -F '\t' '{ c[$2]++; t[$2] += $3; s[$2] += $4 } END { for (p in c) printf "%s %d %.0f %.0f\n", p, c[p], t[p], s[p] }' \
	"$T/calls" | sort >"$T/paths"
# graph_paths: "path calls total self" from graph's tree (times back to ns)
graph_paths() {
	awk 'function ns(v, u) { return v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }
	     /^#/ || /Function/ { next }
	     { line = $0; name = $NF; sub(/^(├─|└─|│ |  )*/, "", name)
	       pre = substr(line, 1, index(line, name) - 1); sub(/^ *[0-9.]+ [a-z]+ +[0-9.]+ [a-z]+ +[0-9]+  /, "", pre)
	       level = 0; while (pre != "") { pre = substr(pre, 1 + (substr(pre, 1, 1) == " " ? 1 : length("│"))); level += 0.5 }
	       stack[level] = name; path = ""; for (i = 0; i < level; i++) path = path stack[i] ";"
	       printf "%s%s %d %.0f %.0f\n", path, name, $5, ns($1, $2), ns($3, $4) }' | sort
}
"$ATF" graph "$T/s" | graph_paths >"$T/graph"
assert_eq "$(cut -d' ' -f1,2 "$T/paths")" "$(cut -d' ' -f1,2 "$T/graph")" "graph paths and calls"
while read -r path calls total self; do
	close "$total" "$(awk -v p="$path" '$1 == p { print $3 }' "$T/paths")" $((calls * 2000 + 1000)) "graph total of $path"
	close "$self" "$(awk -v p="$path" '$1 == p { print $4 }' "$T/paths")" $((calls * 8000 + 1000)) "graph self of $path"
done <"$T/graph"
# below a function: its calls from everywhere, added together
"$ATF" graph "$T/s" outer | graph_paths >"$T/g_outer"
assert_eq "outer 2 outer;inner 6 outer;inner;nap 6 outer;leaf 2 outer;nap 2" \
	"$(cut -d' ' -f1,2 "$T/g_outer" | tr '\n' ' ' | sed 's/ $//')" "graph outer"
# callers: nap 8 times, 6 through inner, 2 right from outer
"$ATF" graph "$T/s" nap --callers >"$T/callers"
assert_contains "$T/callers" '^ +[0-9.]+ ms +8  nap$' "callers: nap"
assert_contains "$T/callers" '^ +[0-9.]+ ms +6  ├─inner$' "callers: through inner"
assert_contains "$T/callers" '^ +[0-9.]+ ms +2  └─outer$' "callers: right from outer"
rc=0; "$ATF" graph "$T/s" nosuch 2>"$T/err" >/dev/null || rc=$?
assert_eq 1 "$rc" "graph of a function never called"
assert_contains "$T/err" "^atftrace graph: nosuch: not called in $T/s" "its error line"
assert_eq 2 "$("$ATF" graph "$T/s" -D 2 | grep -vc '^#\|Function')" "graph -D 2"

# ---- dump's filters ----------------------------------------------------------------------
"$ATF" dump "$T/s" -D 3 | grep -v '^#' >"$T/d3"
assert_eq 8 "$(wc -l <"$T/d3")" "dump -D 3: main, run and two outer, opened and closed"
! grep -q '|       ' "$T/d3" || fail "dump -D 3 printed a fourth level"
# --min-duration: calls shorter than 3 ms go, with what is below them; the reference says which
want_long=$(awk -F '\t' '$3 >= 3000000' "$T/calls" | wc -l)
"$ATF" dump "$T/s" --min-duration 3ms | grep -v '^#' | grep -c '();\|} /\*' >"$T/n" || true
assert_eq "$want_long" "$(cat "$T/n")" "dump --min-duration 3ms: ends of calls of 3 ms or more"
assert_eq "$("$ATF" dump "$T/s" --min-duration 3ms)" "$("$ATF" dump "$T/s" --min-duration 3000000)" "3ms = 3000000"
# -F: only inner's subtrees, inner at level 0; -N: inner hidden with its naps
"$ATF" dump "$T/s" -F inner | grep -v '^#' >"$T/f"
assert_eq 12 "$(grep -c '| inner() {$\|| } /\* inner \*/$' "$T/f")" "dump -F inner: inner at the top"
assert_eq 6 "$(grep -c '|   nap();$' "$T/f")" "dump -F inner: its naps"
assert_eq "$(wc -l <"$T/f")" 18 "dump -F inner: nothing else"
"$ATF" dump "$T/s" -N inner | grep -v '^#' >"$T/n"
! grep -q inner "$T/n" || fail "dump -N inner printed inner"
assert_eq 2 "$(grep -c 'nap();' "$T/n")" "dump -N inner: outer's naps only"
# times since the session start, the same syntax everywhere
"$ATF" dump "$T/s" --from 4.5ms --to 0.0129s >"$T/r"
assert_eq "$("$ATF" dump "$T/s" --from 4500000 --to 12900us)" "$(cat "$T/r")" "4.5ms = 4500000, 0.0129s = 12900us"
grep -v '^#' "$T/r" | awk '{ t = $1 * ($2 == "ms" ? 1e6 : $2 == "us" ? 1e3 : $2 == "s" ? 1e9 : 1)
	if (t < 4500000 || t > 12900000) { print "line outside 4.5ms..12.9ms: " $0; exit 1 } }' >&2 ||
	fail "dump --from/--to printed a line outside the range"
[ "$(grep -vc '^#' "$T/r")" -gt 3 ] || fail "dump --from 4.5ms --to 0.0129s printed too little"
rc=0; "$ATF" report "$T/s" --from 1000000000000000000s 2>"$T/err" >/dev/null || rc=$?
assert_eq 2 "$rc" "report --from too large"
assert_contains "$T/err" "from 1000000000000000000s: too large" "its error line"

# ---- a range: report counts what falls in it, exports stay balanced ----------------------------
# The range is taken from the recording itself, not from wall-clock guesses (the host may be busy):
# FROM is the middle of the first outer, TO the middle of the second, so it cuts through outer,
# inner and nap calls on both sides and the second outer is the one outer called in it.
read -r FROM TO <<<"$(awk 'function ns(v, u) { return v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }
	/\| +outer\(\) \{$/ { s[++n] = ns($1, $2) }
	/\| +\} \/\* outer \*\/$/ { e[++m] = ns($1, $2) }
	END { if (n == 2 && m == 2) printf "%.0f %.0f\n", (s[1] + e[1]) / 2, (s[2] + e[2]) / 2 }' "$T/dump")"
[ -n "$TO" ] || fail "two outer calls in the dump"
"$ATF" report "$T/s" --from "$FROM" --to "$TO" --csv >"$T/rr.csv"
! grep -q '^"main"\|^"run"' "$T/rr.csv" || fail "main and run, called before the range, counted in it"
# the second outer is the one outer called in the range, open at its end
assert_eq "1 1" "$(awk -F, '$1 == "\"outer\"" { print $2, $10 }' "$T/rr.csv")" "outer in $FROM..$TO ns: calls, open at the end"
assert_contains <("$ATF" report "$T/s" --from "$FROM" --to "$TO") '  outer  \(1 open at the end\)$' "open call marked"
"$ATF" export "$T/s" -F chrome -o "$T/r.json" --from "$FROM" --to "$TO"
jq -r '.traceEvents[] | select(.ph == "B" or .ph == "E") | "\(.ph) \(.name)"' "$T/r.json" |
	awk '$1 == "B" { s[++d] = $2; next } { if (d < 1 || s[d] != $2) exit 1; d-- } END { exit d != 0 }' ||
	fail "chrome export of the range is not balanced"
"$ATF" export "$T/s" -F speedscope -o "$T/r.speedscope" --from "$FROM" --to "$TO"
jq -r '.profiles[0].events[] | "\(.type) \(.frame)"' "$T/r.speedscope" |
	awk '$1 == "O" { s[++d] = $2; next } { if (d < 1 || s[d] != $2) exit 1; d-- } END { exit d != 0 }' ||
	fail "speedscope export of the range is not balanced"
assert_eq "$(jq '[.traceEvents[] | select(.ph == "B")] | length' "$T/r.json")" \
	"$(jq '[.profiles[0].events[] | select(.type == "O")] | length' "$T/r.speedscope")" "calls in chrome and speedscope"
"$ATF" export "$T/s" -F folded -o "$T/r.folded" --from "$FROM" --to "$TO"
"$ATF" export "$T/s" -F folded -o "$T/r.calls" --from "$FROM" --to "$TO" --weight calls
assert_eq "$(jq '[.traceEvents[] | select(.ph == "B")] | length' "$T/r.json")" \
	"$(awk '{ n += $NF } END { print n }' "$T/r.calls")" "folded --weight calls = calls in the range"
assert_eq "$(jq '.traced_ns' <("$ATF" report "$T/s" --from "$FROM" --to "$TO" --json))" \
	"$(awk '{ n += $NF } END { print n }' "$T/r.folded")" "folded self times add up to the traced time"
"$ATF" export "$T/s" -F perfetto -o "$T/r.pftrace" --from "$FROM" --to "$TO"
protoc --decode=perfetto.protos.Trace -I "$ROOT/tests/data" "$ROOT/tests/data/perfetto_trace.proto" \
	<"$T/r.pftrace" >"$T/r.txt"
assert_eq "$(grep -c 'TYPE_SLICE_BEGIN' "$T/r.txt")" "$(grep -c 'TYPE_SLICE_END' "$T/r.txt")" \
	"perfetto begins and ends of the range"
# ---- recursion and unwinding: 3 recursions 100 deep; the kernel reports the returns of the
# outer 63 levels only, the inner 37 are closed as unwound (test_record_recursion.sh; plain probes:
# through call sites, the default, every level returns) ------------------------------------------
"$ATF" record --no-trampolines -o "$T/rec" -f main -f recurse -- "$TARGETS/recursion" 100 3 >/dev/null 2>&1 || fail "record recursion"
"$ATF" report "$T/rec" --csv >"$T/rec.csv"
IFS=, read -r _ calls total self _ min max _ unw open <<<"$(grep '^"recurse"' "$T/rec.csv")"
assert_eq "300 111 0" "$calls $unw $open" "recurse: calls, unwound, open"
# total counts the outermost frames only: the three top-level recurse calls, from the dump
outer3=$("$ATF" dump "$T/rec" | awk '/^ .*\|   \} \/\* recurse \*\/$/ { v = $3; u = $4
	n += v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) } END { printf "%.0f", n }')
close "$total" "$outer3" 3000 "recurse total = its three outermost calls"
[ "$self" -le "$total" ] || fail "recurse self $self above its total $total"
"$ATF" graph "$T/rec" recurse --callers >"$T/rec.callers"
assert_contains "$T/rec.callers" '^ +[0-9.]+ [mun]?s +3  recurse$' "callers of recurse: its 3 outermost calls"
assert_contains "$T/rec.callers" '^ +[0-9.]+ [mun]?s +3  └─main$' "callers of recurse: main"
"$ATF" graph "$T/rec" recurse >"$T/rec.graph"
assert_eq 100 "$(grep -vc '^#\|Function' "$T/rec.graph")" "graph below recurse: one line per level"
assert_eq 37 "$(grep -c 'recurse (unwound)$' "$T/rec.graph")" "graph: the 37 unwound levels marked"

# ---- a session of several processes (--follow-fork): one report, one trace --------------------
"$ATF" record --follow-fork -o "$T/ff" -f child_work -f parent_work -- "$TARGETS/fork_exec" 3 2 >/dev/null 2>&1 ||
	fail "record --follow-fork"
pids=$(cd "$T/ff" && ls -d pid_* | sed 's/pid_//' | sort -n | tr '\n' ' ' | sed 's/ $//')
assert_eq 2 "$(echo "$pids" | wc -w)" "processes recorded"
assert_eq "child_work,3 parent_work,2" "$("$ATF" report "$T/ff" --csv -s name | tail -n +2 | cut -d, -f1,2 | tr -d '"' | tr '\n' ' ' | sed 's/ $//')" \
	"report over both processes"
"$ATF" graph "$T/ff" >"$T/ff.graph"
assert_eq 2 "$(grep -c '^ *[^ 0-9][^ ]* \[[0-9]*\]$' "$T/ff.graph")" "graph: a node per process"
"$ATF" export "$T/ff" -F chrome -o "$T/ff.json"
assert_eq "$pids" "$(jq -r '[.traceEvents[] | select(.ph == "B") | .pid] | unique | map(tostring) | join(" ")' "$T/ff.json")" \
	"chrome: both pids in one trace"
"$ATF" export "$T/ff" -F perfetto -o "$T/ff.pftrace"
protoc --decode=perfetto.protos.Trace -I "$ROOT/tests/data" "$ROOT/tests/data/perfetto_trace.proto" \
	<"$T/ff.pftrace" >"$T/ff.txt"
assert_eq "$pids" "$(sed -n 's/^      pid: //p' "$T/ff.txt" | sort -un | tr '\n' ' ' | sed 's/ $//')" "perfetto: both pids"
assert_eq 2 "$(grep -c '^    process {' "$T/ff.txt")" "perfetto: a process track each"
assert_eq "1 2" "$(sed -n 's/^  trusted_packet_sequence_id: //p' "$T/ff.txt" | sort -un | tr '\n' ' ' | sed 's/ $//')" \
	"perfetto: a packet sequence each"
assert_eq 2 "$(grep -c '^  sequence_flags: 1$' "$T/ff.txt")" "perfetto: each sequence starts cleared"
"$ATF" export "$T/ff" -F folded -o "$T/ff.folded"
assert_eq 2 "$(cut -d';' -f1 "$T/ff.folded" | sort -u | wc -l)" "folded: a root per process"
rc=0; "$ATF" export "$T/ff" -F rtc -o "$T/ff.rtc" 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "rtc of two processes refused"
assert_eq "atftrace export: $T/ff: holds 2 processes, and -F rtc holds one process; choose one with --pid: $pids" \
	"$(cat "$T/err")" "its one line"
echo "ok: report, graph and dump's filters agree with the dump; ranges balanced"
