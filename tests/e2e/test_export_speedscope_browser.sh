#!/usr/bin/env bash
# A real browser: speedscope 1.25.0 (npm, pinned; scripts/deps.sh) in headless Chromium (Debian)
# loads the chrome and the speedscope exports of a recorded target (tests/targets/nest_sleep.c),
# the way speedscope's own command line opens a file (index.html#localProfilePath=<js>). The
# test asserts speedscope warned about nothing and that its Sandwich view (total and self time
# per function, read from the page) shows the durations atftrace report computes from the ATF
# calls, to the two decimals speedscope prints.
source "$(dirname "$0")/lib.sh"
need_bpf
SS=$OUT/npm/node_modules/speedscope/dist/release/index.html
[ -f "$SS" ] || fail "needs $SS (scripts/deps.sh installs it)"
command -v chromium >/dev/null || fail "needs chromium (scripts/deps.sh installs it)"
command -v node >/dev/null || fail "needs node"

"$ATF" record -o "$T/s" -- "$TARGETS/nest_sleep" >/dev/null 2>"$T/rec.err" || { cat "$T/rec.err" >&2; fail "record"; }
"$ATF" report "$T/s" --csv | tail -n +2 | tr -d '"' | awk -F, '{ print $1, $3, $4 }' | sort >"$T/want"   # name total self (ns)
assert_eq 6 "$(wc -l <"$T/want")" "functions in the report"

# speedscope FILE NAME: load FILE in speedscope as NAME (its importer picks the format from the
# contents, but a name ending in .chrome.json would pick the Chrome-profiler importer), print
# "name total self" per Sandwich row and leave speedscope's console in $T/NAME.console.
speedscope() {
	local file=$1 name=$2 js=$T/$2.js
	# speedscope's loader calls speedscope.loadFileFromBase64(); console.warn/error first get a
	# marker so that only speedscope's own complaints are counted, not the browser's.
	node -e 'const fs = require("fs");
		const b64 = fs.readFileSync(process.argv[1]).toString("base64");
		const tag = (k) => `const ${k}0 = console.${k}; console.${k} = (...a) => ${k}0("ATF-" + "${k.toUpperCase()}: " + a.join(" "));`;
		fs.writeFileSync(process.argv[2], tag("warn") + tag("error") +
			`speedscope.loadFileFromBase64(${JSON.stringify(process.argv[3])}, ${JSON.stringify(b64)});`);' \
		"$file" "$js" "$name"
	timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/profile-$name" \
		--enable-logging=stderr --v=0 --virtual-time-budget=10000 --window-size=1200,900 \
		--dump-dom "file://$SS#localProfilePath=$js&view=sandwich" >"$T/$name.dom" 2>"$T/$name.console" ||
		fail "chromium failed on $name"
	# each Sandwich row: <td>total (pct)</td><td>self (pct)</td><td><span ...></span>name</td>
	# (rows with a title are the profile list of a file of several profiles)
	sed 's/<tr/\n<tr/g' "$T/$name.dom" | grep '^<tr' | grep -v '^<tr title=' | grep -o '<td[^>]*>[^<]*\|</span>[^<]*' |
		sed 's/<td[^>]*>//; s/<\/span>//' | awk 'NF' | paste - - - |
		awk -F '\t' '{ split($1, t, " "); split($2, s, " "); print $3, t[1], s[1] }' | sort
}

# to_ns VALUE: speedscope's "20.08ms" / "13.50µs" / "1.02s" / "900.00ns" in ns, and the unit's hundredth
to_ns() {
	awk -v v="$1" 'BEGIN { u = v; sub(/^[0-9.]+/, "", u); n = v + 0
		m = u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "µs" ? 1e3 : u == "ns" ? 1 : -1
		if (m < 0) { print "bad"; exit 1 } printf "%.0f %.0f\n", n * m, m / 100 }'
}

check() {   # NAME: speedscope's rows equal the report's times
	local name=$1 f total self want_t want_s tn tt sn st
	grep -q 'ATF-\(WARN\|ERROR\)' "$T/$name.console" && {
		grep 'ATF-' "$T/$name.console" | head -n 5 >&2; fail "speedscope warned on $name"; }
	assert_eq 6 "$(wc -l <"$T/$name.rows")" "$name: Sandwich rows"
	while read -r f total self; do
		read -r want_t want_s <<<"$(awk -v f="$f" '$1 == f { print $2, $3 }' "$T/want")"
		[ -n "$want_t" ] || fail "$name: speedscope shows $f, which report does not"
		read -r tn tt <<<"$(to_ns "$total")"
		read -r sn st <<<"$(to_ns "$self")"
		# speedscope rounds to two decimals of its unit: allow that, and no more
		awk -v a="$tn" -v b="$want_t" -v t="$tt" 'BEGIN { d = a - b; exit !(d <= t && -d <= t) }' ||
			fail "$name: total of $f is $total in speedscope, $want_t ns in atftrace"
		awk -v a="$sn" -v b="$want_s" -v t="$st" 'BEGIN { d = a - b; exit !(d <= t && -d <= t) }' ||
			fail "$name: self of $f is $self in speedscope, $want_s ns in atftrace"
	done <"$T/$name.rows"
}

"$ATF" export "$T/s" -F chrome -o "$T/trace.json"
speedscope "$T/trace.json" trace.json >"$T/trace.json.rows"
assert_contains "$T/trace.json.console" '"Importing as Trace Event Format profile"' "chrome: speedscope's importer"
check trace.json

"$ATF" export "$T/s" -F speedscope -o "$T/trace.speedscope.json"
speedscope "$T/trace.speedscope.json" trace.speedscope.json >"$T/trace.speedscope.json.rows"
assert_contains "$T/trace.speedscope.json.console" '"Importing as speedscope json file"' "speedscope: importer"
check trace.speedscope.json

# the folded export imports too (speedscope's collapsed-stack importer), with the same self times
"$ATF" export "$T/s" -F folded -o "$T/trace.folded"
speedscope "$T/trace.folded" trace.collapsedstack.txt >"$T/trace.collapsedstack.txt.rows"
grep -q 'ATF-\(WARN\|ERROR\)' "$T/trace.collapsedstack.txt.console" && fail "speedscope warned on the folded export"
assert_eq 6 "$(wc -l <"$T/trace.collapsedstack.txt.rows")" "folded: Sandwich rows"

# a range in which the main thread has no event (main's call before it, its return after): its
# profile is left out, as Chrome's export leaves it out, so speedscope does not open on a blank one
"$ATF" record -o "$T/th" -f main -f thread_main -f thread_work -- "$TARGETS/threads" 2 3 >/dev/null 2>&1 ||
	fail "record threads"
start=$(jq .time_start_ns "$T"/th/pid_*/manifest.json)
for d in "$T"/th/pid_*/thread_*; do "$TOOLS/atf_raw" "$d" | awk -v d="$(basename "$d")" '$1 == "ev" { print d, $7 }'; done >"$T/th.ts"
main_dir=$(sort -k2,2n "$T/th.ts" | head -1 | cut -d' ' -f1)            # main's call comes first
read -r lo hi <<<"$(awk -v m="$main_dir" '$1 != m { if (!lo || $2 < lo) lo = $2; if ($2 > hi) hi = $2 } END { print lo, hi }' "$T/th.ts")"
awk -v m="$main_dir" -v lo="$lo" -v hi="$hi" '$1 == m && $2 >= lo && $2 <= hi { exit 1 }' "$T/th.ts" ||
	fail "main's thread has events between its workers' first and last"
"$ATF" export "$T/th" -F speedscope -o "$T/range.speedscope.json" --from $((lo - start)) --to $((hi - start))
assert_eq "2 0" "$(jq -r '[(.profiles | length), ([.profiles[] | select((.events | length) == 0)] | length)] | "\(.[0]) \(.[1])"' "$T/range.speedscope.json")" \
	"ranged speedscope: a profile per worker thread, none empty"
speedscope "$T/range.speedscope.json" range.speedscope.json >"$T/range.rows"
assert_eq "thread_main thread_work" "$(cut -d' ' -f1 "$T/range.rows" | tr '\n' ' ' | sed 's/ $//')" \
	"ranged speedscope opens on a profile with the workers' functions"
echo "ok: speedscope in Chromium reads chrome, speedscope and folded exports with no warning, times as atftrace's; ranged profiles none empty"
