#!/usr/bin/env bash
# wtf-trace exports read by the reference loader (npm tracing-framework@2015.7.15-1): bin/dump.js
# loads the binary file and the COMPLETE JSON file (exit 0, no error) and prints zones[0]; every
# traced function must appear there as often as the thread called it, and every other record
# (leave, detail, exception) as often as the session says. A small node script loads all three
# forms (PARTIAL lines merged into one object, the way JsonStreamSource accepts chunks) and counts
# the events of every zone, which must equal the session's counts.
source "$(dirname "$0")/lib.sh"

WTF=$ROOT/.output/npm/node_modules/tracing-framework
command -v node >/dev/null || fail "needs node (scripts/deps.sh installs it)"
command -v jq >/dev/null || fail "needs jq (scripts/deps.sh installs it)"
[ -f "$WTF/bin/dump.js" ] || fail "needs $WTF (scripts/deps.sh installs it)"
[ -x "$TOOLS/gen_session" ] || fail "missing $TOOLS/gen_session (make OUTPUT=$OUTPUT tools)"

S=$T/s/pid_4242
mkdir -p "$T/s"
# ~3 MiB of records: several 1 MiB chunks in the JSON forms (cmd_export takes --chunk-size for
# -F wtf only), hundreds of 4 KiB chunks in the binary one.
"$TOOLS/gen_session" -o "$S" --threads 3 --events 300000 --depth 4 --recursion 4 --detail --detail-every 50 \
	--seed 11 >/dev/null
"$ATF" export "$T/s" -F wtf -o "$T/out.wtf-trace" --chunk-size 4K
"$ATF" export "$T/s" -F wtf-json -o "$T/out.wtf-json"
"$ATF" export "$T/s" -F wtf-json --json-mode partial -o "$T/partial.wtf-json"
[ "$(grep -c . "$T/partial.wtf-json")" -ge 4 ] || fail "PARTIAL output: expected a header line and 3+ chunk lines"

# dump FILE OUT: run dump.js; it must succeed and print no error.
dump() {
	local rc=0
	node "$WTF/bin/dump.js" "$1" >"$2" 2>&1 || rc=$?
	assert_eq 0 "$rc" "dump.js exit status on $(basename "$1")"
	if grep -qiE 'error|exceeded|unresolved|undefined' "$2"; then
		sed 's/^/  | /' "$2" | grep -iE 'error|exceeded|unresolved|undefined' | head -n 5 >&2
		fail "dump.js reported a problem on $(basename "$1")"
	fi
}
dump "$T/out.wtf-trace" "$T/dump_bin"
dump "$T/out.wtf-json" "$T/dump_json"
cmp -s <(tail -n +2 "$T/dump_bin") <(tail -n +2 "$T/dump_json") || fail "binary and JSON dumps differ"

# Session side, per thread: index events as "fid_hex kind has_detail" lines.
events_of() {   # thread dir id
	local f=$S/thread_$1/index.atf n
	n=$(od -An -tu4 -j28 -N4 "$f" | tr -d ' ')
	od -An -v -tx4 -w32 -j64 -N $((n * 32)) "$f" |
		awk '{ printf "0x%s%s %d %d\n", $4, $3, $6 + 0, $8 != "ffffffff" }'
}

# zones[0] is the thread whose event comes first; dump.js names it "<comm>:<tid>".
zone=$(sed -n '3s/^ *[0-9.]*ms \[ \([^]]*\) \].*/\1/p' "$T/dump_bin")
tid=${zone##*:}
id=$(jq -r --argjson tid "$tid" '.threads[] | select(.tid == $tid) | .id' "$S/manifest.json")
[ -n "$id" ] || fail "zone '$zone' names no thread of the session"
events_of "$id" >"$T/ev0"
# the name column is padded to 48 characters; arguments (JSON) follow after the padding
names() { sed -E 's/^ *[0-9.]+ms \[ [^]]* \] //; s/ {2,}.*$//; s/ \{.*$//; s/ +$//' "$1"; }
names "$T/dump_bin" | tail -n +3 | sort | uniq -c | awk '{ c = $1; $1 = ""; print substr($0, 2) "\t" c }' \
	>"$T/dump_counts"
count_of() { awk -F '\t' -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }' "$T/dump_counts"; }

calls=0
while read -r fid n; do
	name=$(jq -r --arg f "$fid" '.symbols[] | select(.function_id == $f) | (.demangled // .name)' "$S/manifest.json")
	[ -n "$name" ] || name=$fid
	assert_eq "$n" "$(count_of "$name")" "calls of $name in zone $zone"
	calls=$((calls + n))
done < <(awk '$2 == 1 { c[$1]++ } END { for (f in c) print f, c[f] }' "$T/ev0")
[ "$calls" -gt 20 ] || fail "only $calls calls in zone $zone"
leaves=$(awk '$2 != 1' "$T/ev0" | wc -l)
exceptions=$(awk '$2 == 3' "$T/ev0" | wc -l)
details=$(awk '$3 == 1' "$T/ev0" | wc -l)
[ "$details" -gt 0 ] || fail "no detail events in zone $zone"
assert_eq "$leaves" "$(count_of 'wtf.scope#leave')" "leaves in zone $zone"
assert_eq "$exceptions" "$(count_of 'atftrace#exception')" "exceptions in zone $zone"
assert_eq "$details" $(($(count_of 'atftrace#callDetail') + $(count_of 'atftrace#returnDetail'))) \
	"detail events in zone $zone"
assert_eq $(($(wc -l <"$T/ev0") + exceptions + details)) $(($(wc -l <"$T/dump_bin") - 2)) \
	"lines dump.js printed for zone $zone"

# Every zone, in all three forms, through the loader's own API.
cat >"$T/count.js" <<'EOF'
var fs = require('fs');
var wtf = require(process.argv[2]);
global.wtf = wtf;
var file = process.argv[3], input = file;
if (process.argv[4] === 'partial') {    // header line, then one {"chunks":[chunk]} per line
	var lines = fs.readFileSync(file, 'utf8').split('\n').filter(function (l) { return l.length; });
	input = JSON.parse(lines[0]);
	input.chunks = [];
	lines.slice(1).forEach(function (l) { input.chunks = input.chunks.concat(JSON.parse(l).chunks); });
}
wtf.db.load(input, function (db) {
	if (db instanceof Error || !db) { console.log('ERROR', db); process.exit(1); }
	var out = [];
	db.getZones().forEach(function (z) {
		var n = 0;
		for (var it = z.getEventList().begin(); !it.done(); it.next()) n++;
		out.push(z.getName() + ' ' + n);
	});
	console.log(out.sort().join('\n'));
});
EOF
for t in $(jq -r '.threads[].id' "$S/manifest.json"); do
	events_of "$t" | awk -v name="$(jq -r --argjson i "$t" '.threads[] | select(.id == $i) | "\(.name):\(.tid)"' "$S/manifest.json")" \
		'{ n++; x += ($2 == 3) + $3 } END { print name, n + x }'
done | sort >"$T/want"
node "$T/count.js" "$WTF/build-out/wtf_node_js_compiled.js" "$T/out.wtf-trace" >"$T/got_bin"
node "$T/count.js" "$WTF/build-out/wtf_node_js_compiled.js" "$T/out.wtf-json" >"$T/got_json"
node "$T/count.js" "$WTF/build-out/wtf_node_js_compiled.js" "$T/partial.wtf-json" partial >"$T/got_partial"
assert_eq "$(cat "$T/want")" "$(cat "$T/got_bin")" "events per zone, binary"
assert_eq "$(cat "$T/want")" "$(cat "$T/got_json")" "events per zone, JSON complete"
assert_eq "$(cat "$T/want")" "$(cat "$T/got_partial")" "events per zone, JSON partial"

# A range whose first event is a call that returns within its first microsecond: the loader takes
# a scope ending at time 0 for an instance, so every call of the range must still be a scope.
# (gen_session is deterministic: its thread_0 has such calls; the first one is taken.)
R=$T/r/pid_4242
mkdir -p "$T/r"
"$TOOLS/gen_session" -o "$R" --threads 1 --calls 6 --depth 3 --seed 1 >/dev/null
"$TOOLS/atf_raw" "$R/thread_0" >"$T/r.raw"
short_ts=$(awk '$1 == "ev" { if (pk == "C" && $3 == "R" && $7 - pt < 1000) { print pt; exit } pk = $3; pt = $7 }' "$T/r.raw")
[ -n "$short_ts" ] || fail "gen_session made no call shorter than 1 us"
from=$((short_ts - $(jq .time_start_ns "$R/manifest.json")))
want=$(awk -v t="$short_ts" '$1 == "ev" && $3 == "C" && $7 >= t' "$T/r.raw" | wc -l)
cat >"$T/scopes.js" <<'EOF'
var wtf = require(process.argv[2]);
global.wtf = wtf;
wtf.db.load(process.argv[3], function (db) {
	if (db instanceof Error || !db) { console.log('ERROR', db); process.exit(1); }
	var n = 0;
	db.getZones().forEach(function (z) {
		for (var it = z.getEventList().begin(); !it.done(); it.next())
			if (it.isScope()) n++;
	});
	console.log(n);
});
EOF
"$ATF" export "$T/r" -F wtf -o "$T/r.wtf-trace" --from "$from"
"$ATF" export "$T/r" -F wtf-json -o "$T/r.wtf-json" --from "$from"
assert_eq "$want" "$(node "$T/scopes.js" "$WTF/build-out/wtf_node_js_compiled.js" "$T/r.wtf-trace")" \
	"scopes of a range starting at a call of under 1 us, binary"
assert_eq "$want" "$(node "$T/scopes.js" "$WTF/build-out/wtf_node_js_compiled.js" "$T/r.wtf-json")" \
	"scopes of a range starting at a call of under 1 us, JSON"
# --chunk-size cuts the JSON form's chunks too
"$ATF" export "$T/r" -F wtf-json -o "$T/small.wtf-json" --chunk-size 1K
[ "$(jq '.chunks | length' "$T/small.wtf-json")" -gt "$(jq '.chunks | length' "$T/r.wtf-json")" ] ||
	fail "--chunk-size 1K did not cut -F wtf-json into more chunks"
echo "ok: zone $zone: $calls calls, $leaves leaves, $exceptions exceptions, $details details; ranged scopes $want"
