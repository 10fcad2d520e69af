#!/usr/bin/env bash
# The Perfetto export decoded by protoc with tests/data/perfetto_trace.proto (Perfetto's own
# field numbers): nothing outside that schema, one process and one thread descriptor per thread,
# one TrackEvent per recorded event, one sequence, the incremental-state flags where they belong,
# and the detail registers on every event that has a detail record. Then, thread by thread, every
# TrackEvent's values (timestamp, begin/end, name, exception, gp0..gp7/lr/fp/sp by annotation
# name) equal the session's, read from the raw bytes by tests/tools/atf_raw (no libatf).
source "$(dirname "$0")/lib.sh"

command -v protoc >/dev/null || fail "needs protoc (scripts/deps.sh installs protobuf-compiler)"
command -v jq >/dev/null || fail "needs jq (scripts/deps.sh installs it)"
[ -x "$TOOLS/gen_session" ] || fail "missing $TOOLS/gen_session (make OUTPUT=$OUTPUT tools)"
PROTO=$ROOT/tests/data/perfetto_trace.proto

mkdir -p "$T/s"
"$TOOLS/gen_session" -o "$T/s/pid_4242" --threads 3 --calls 40 --detail --detail-every 5 --seed 11 >/dev/null
M=$T/s/pid_4242/manifest.json
nthreads=$(jq '.threads | length' "$M")
total=$(jq '[.threads[].index_events] | add' "$M")
details=$(jq '[.threads[].detail_events] | add' "$M")
[ "$total" -gt 100 ] && [ "$details" -gt 10 ] || fail "session too small: $total events, $details detail"

decode() {   # trace text-out
	protoc -I "$ROOT/tests/data" --decode=perfetto.protos.Trace "$PROTO" <"$1" >"$2" 2>"$T/protoc.err" \
		|| fail "protoc: $(head -n 3 "$T/protoc.err")"
	[ ! -s "$T/protoc.err" ] || fail "protoc warned: $(head -n 3 "$T/protoc.err")"
	# Fields outside the .proto come out as bare numbers ("  61: 5").
	! grep -qE '^ *[0-9]+:' "$2" || fail "fields outside the schema: $(grep -m1 -E '^ *[0-9]+:' "$2")"
}
count() { grep -cE -- "$1" "$2" || true; }

"$ATF" export "$T/s" -F perfetto -o "$T/all.pftrace"
decode "$T/all.pftrace" "$T/all.txt"
packets=$(count '^packet \{' "$T/all.txt")
assert_eq "$((1 + nthreads + total))" "$packets" "packets"
assert_eq "$total" "$(count '^  track_event \{' "$T/all.txt")" "track events"
assert_eq "$((1 + nthreads))" "$(count '^  track_descriptor \{' "$T/all.txt")" "track descriptors"
assert_eq 1 "$(count '^    process \{' "$T/all.txt")" "process descriptors"
assert_eq "$nthreads" "$(count '^    thread \{' "$T/all.txt")" "thread descriptors"
assert_eq "$(jq -r '.threads[].tid' "$M" | sort | tr '\n' ' ')" \
	"$(sed -n 's/^      tid: //p' "$T/all.txt" | sort | tr '\n' ' ')" "thread tids"
assert_eq "$packets" "$(count '^  trusted_packet_sequence_id: 1$' "$T/all.txt")" "packets on sequence 1"
assert_eq 1 "$(count '^  sequence_flags: 1$' "$T/all.txt")" "SEQ_INCREMENTAL_STATE_CLEARED packets"
assert_eq "  sequence_flags: 1" "$(grep -m1 '^  sequence_flags' "$T/all.txt")" "first flags"

begins=$(count 'type: TYPE_SLICE_BEGIN' "$T/all.txt")
ends=$(count 'type: TYPE_SLICE_END' "$T/all.txt")
assert_eq "$total" "$((begins + ends))" "begin + end events"
assert_eq "$begins" "$(count '^  sequence_flags: 2$' "$T/all.txt")" "SEQ_NEEDS_INCREMENTAL_STATE packets"
assert_eq "$begins" "$(count '^    name_iid: ' "$T/all.txt")" "name_iid on every begin"
# Interned names: each defined once, and as many as distinct functions called.
assert_eq "$(count '^      iid: ' "$T/all.txt")" "$(sed -n 's/^      iid: //p' "$T/all.txt" | sort -u | wc -l)" \
	"interned names defined once"
"$ATF" export "$T/s" -F chrome -o "$T/all.json"
assert_eq "$(jq '[.traceEvents[] | select(.ph == "B") | .name] | unique | length' "$T/all.json")" \
	"$(count '^      iid: ' "$T/all.txt")" "interned names = distinct names"
assert_eq "$begins" "$(jq '[.traceEvents[] | select(.ph == "B")] | length' "$T/all.json")" "begins = Chrome B events"
assert_eq "$(jq '[.traceEvents[] | select(.ph == "i" and .name == "unwound")] | length' "$T/all.json")" \
	"$(count 'name: "exception"' "$T/all.txt")" "exception annotations"
assert_eq "$details" "$(count 'name: "gp0"' "$T/all.txt")" "events with registers"
assert_eq "$details" "$(count 'name: "sp"' "$T/all.txt")" "events with sp"

# Timestamps non-decreasing across the merged stream.
sed -n 's/^  timestamp: //p' "$T/all.txt" | sort -n -c || fail "timestamps out of order"
assert_eq "$total" "$(count '^  timestamp: ' "$T/all.txt")" "timestamps"

# pf_events TEXT: protoc's text -> one line per TrackEvent: "TS B NAME" or "TS E", then " ex" for
# an exception, then " gp0=V ... sp=V" (decimal) in the order of the annotations
pf_events() {
	awk '/^packet \{/ { ts = ""; type = ""; iid = ""; n = 0; ex = 0; split("", val) }
	/^  timestamp: / { ts = $2 }
	/^    type: TYPE_SLICE_BEGIN/ { type = "B" }
	/^    type: TYPE_SLICE_END/ { type = "E" }
	/^    name_iid: / { iid = $2 }
	/^    debug_annotations \{/ { inann = 1; an = ""; av = ""; next }
	inann && /^      name: / { an = substr($0, 14, length($0) - 14) }
	inann && /^      [a-z]+_value: / { av = $2 }
	inann && /^    \}/ { inann = 0; if (an == "exception" && av == "true") ex = 1; else { val[an] = av; order[++n] = an } }
	!inann && /^      iid: / { cur = $2 }
	!inann && /^      name: / { names[cur] = substr($0, 14, length($0) - 14) }
	/^\}/ && type != "" {
		line = ts " " type
		if (type == "B") line = line " " names[iid]
		if (ex) line = line " ex"
		for (i = 1; i <= n; i++) line = line " " order[i] "=" val[order[i]]
		print line
	}' "$1"
}
# raw_events NAMES THREAD_DIR: the same lines from the thread's files as atf_raw decodes them, names
# from NAMES ("FUNCTION_ID NAME" per line) escaped as protoc prints them
raw_events() {
	"$TOOLS/atf_raw" -d "$2" >"$T/raw" || fail "atf_raw $2: $(grep bad "$T/raw")"
	LC_ALL=C awk 'BEGIN { for (i = 0; i < 256; i++) ord[sprintf("%c", i)] = i }
	function esc(s,    out, i, c, o) {
		out = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1); o = ord[c]
			if (c == "\"" || c == "\\") out = out "\\" c
			else if (c == "\n") out = out "\\n"
			else if (c == "\t") out = out "\\t"
			else if (c == "\r") out = out "\\r"
			else if (o < 32 || o >= 127) out = out sprintf("\\%03o", o)
			else out = out c
		}
		return out
	}
	NR == FNR { id = $1; sub(/^[^ ]* /, ""); name[id] = esc($0); next }
	$1 == "ev" { n++; ts[n] = $7; kind[n] = $3; fid[n] = $4; seq[$2] = n }
	$1 == "reg" {
		split($8, g, ",")
		r = ""
		for (i = 1; i <= 8; i++) r = r " gp" (i - 1) "=" g[i]
		regs[seq[$3]] = r " lr=" $10 " fp=" $12 " sp=" $14
	}
	END {
		for (i = 1; i <= n; i++) {
			line = ts[i] (kind[i] == "C" ? " B " name[fid[i]] : " E")
			if (kind[i] == "X") line = line " ex"
			print line regs[i]
		}
	}' "$1" "$T/raw"
}
jq -r '.symbols[] | "\(.function_id) \(.demangled // .name)"' "$M" >"$T/names"
for ((i = 0; i < nthreads; i++)); do
	"$ATF" export "$T/s" -F perfetto -o "$T/v$i.pftrace" --thread $i
	decode "$T/v$i.pftrace" "$T/v$i.txt"
	pf_events "$T/v$i.txt" >"$T/got$i"
	raw_events "$T/names" "$T/s/pid_4242/thread_$i" >"$T/want$i"
	assert_eq "$(jq ".threads[$i].index_events" "$M")" "$(wc -l <"$T/want$i")" "thread $i: events atf_raw read"
	diff "$T/want$i" "$T/got$i" >"$T/diff$i" || { head -n 6 "$T/diff$i" >&2; fail "thread $i: Perfetto values differ from the session's"; }
done
assert_eq "$details" "$(cat "$T"/got* | grep -c ' lr=')" "events compared with registers"

# One thread: its descriptor only, its events only.
"$ATF" export "$T/s" -F perfetto -o "$T/t1.pftrace" --thread 1
decode "$T/t1.pftrace" "$T/t1.txt"
assert_eq "$(jq '.threads[1].index_events' "$M")" "$(count '^  track_event \{' "$T/t1.txt")" "thread 1 events"
assert_eq 1 "$(count '^    thread \{' "$T/t1.txt")" "thread 1 descriptors"
assert_eq "$(jq '.threads[1].tid' "$M")" "$(sed -n 's/^      tid: //p' "$T/t1.txt")" "thread 1 tid"
echo "ok: $total events, $begins slices, $details with registers"
