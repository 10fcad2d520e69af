#!/usr/bin/env bash
# report, graph and folded checked to the nanosecond against durations this test computes itself
# from the raw events (tests/tools/atf_raw reads the thread files without libatf), on a target
# with recursion whose functions come out in a different order under every sort key
# (tests/targets/report_mix.c): every column of report for every -s key, graph's whole text
# (below every root and below one function), folded for every --weight.
source "$(dirname "$0")/lib.sh"
need_bpf
command -v jq >/dev/null || fail "needs jq"
export LC_ALL=C

# one recording and its reference; the six keys must order the rows six ways, which takes
# real time differences: on a loaded machine a preemption can make two orders equal, and
# then the target is recorded again (up to three times) before that counts as a failure
record_and_check() {
	rm -rf "$T/s"
	"$ATF" record -o "$T/s" -- "$TARGETS/report_mix" >/dev/null 2>"$T/rec.err" || { cat "$T/rec.err" >&2; fail "record"; }
	dir=$(echo "$T"/s/pid_*)
	jq -r '.symbols[] | "\(.function_id) \(.name)"' "$dir/manifest.json" >"$T/names"
	for th in "$dir"/thread_*; do "$TOOLS/atf_raw" "$th"; done >"$T/raw" || fail "atf_raw: $(grep bad "$T/raw")"

	# ---- the reference, from the raw events ----------------------------------------------------------
	# per call: name, its path from the thread's root, duration, self time, whether an outer frame of
	# the same function is on the stack (then its time is already in that one's total)
	awk 'NR == FNR { name[$1] = $2; next }
	     $1 == "index" { d = 0; next }
	     $1 != "ev" { next }
	     $3 == "C" { fid[d] = $4; ts[d] = $7; kids[d] = 0; d++; next }
	     $3 == "R" { if (!d || fid[d - 1] != $4) { print "unbalanced at " $0 > "/dev/stderr"; exit 1 }
	                 d--; dur = $7 - ts[d]; inner = 0; path = ""
	                 for (i = 0; i < d; i++) { path = path name[fid[i]] ";"; if (fid[i] == $4) inner = 1 }
	                 printf "%s %s%s %d %d %d %d\n", name[$4], path, name[$4], dur, dur - kids[d], inner, d
	                 if (d) kids[d - 1] += dur; next }
	     { print "unexpected event " $0 > "/dev/stderr"; exit 1 }' "$T/names" "$T/raw" >"$T/calls" ||
		fail "raw events not as expected"
	assert_eq 38 "$(wc -l <"$T/calls")" "calls: main, driver, 12 recur, one_long, 3 vary and 20 tiny, all returned"
	traced=$(awk '$6 == 0 { n += $3 } END { printf "%d", n }' "$T/calls")

	# report's rows: function calls total self avg min max share (total: outermost frames only;
	# avg: every frame's time over every call)
	awk -v traced="$traced" '{ f = $1; c[f]++; sum[f] += $3; s[f] += $4; if (!$5) t[f] += $3
	       if (!(f in mn) || $3 < mn[f]) mn[f] = $3; if ($3 > mx[f]) mx[f] = $3 }
	     END { for (f in c) printf "\"%s\",%d,%d,%d,%d,%d,%d,%.4f,0,0\n", f, c[f], t[f], s[f], int(sum[f] / c[f]),
	                               mn[f], mx[f], 100 * t[f] / traced }' "$T/calls" >"$T/rows"
	# the order of each sort key: the largest first, ties by name
	sorted() {      # KEY -> the reference rows in that order
		case $1 in
		total) k=3 ;; self) k=4 ;; calls) k=2 ;; avg) k=5 ;; max) k=7 ;; name) sort -t, -k1,1 "$T/rows"; return ;;
		esac
		sort -t, -k${k},${k}nr -k1,1 "$T/rows"
	}
	orders=""
	for key in total self calls avg max name; do
		"$ATF" report "$T/s" -s "$key" --csv | tail -n +2 >"$T/got.$key"
		sorted "$key" >"$T/want.$key"
		diff "$T/want.$key" "$T/got.$key" >&2 || fail "report -s $key differs from the raw events (< want, > got)"
		orders="$orders$(cut -d, -f1 "$T/want.$key" | tr -d '\n')|"
	done
	# every key orders the rows its own way, so a key sorting by another's value cannot pass
	assert_eq 6 "$(echo "$orders" | tr '|' '\n' | grep -c .)" "orders"
	distinct=$(echo "$orders" | tr '|' '\n' | grep . | sort -u | wc -l)
}
for attempt in 1 2 3; do
	record_and_check
	[ "$distinct" = 6 ] && break
done
assert_eq 6 "$distinct" "six different orders of the six keys"

# recursion: recur's average is over its 12 frames, not its outermost total over them
IFS=, read -r _ calls total _ avg _ <<<"$(grep '^"recur"' "$T/want.total")"
assert_eq 12 "$calls" "recur calls"
[ "$avg" -gt $((total / calls)) ] || fail "recur's average $avg is not above total/calls: no recursion to tell them apart"
# the same numbers in --json
assert_eq "$(sort "$T/want.total" | cut -d, -f1-7)" \
	"$("$ATF" report "$T/s" --json | jq -r '.functions[] | "\"\(.function)\",\(.calls),\(.total_ns),\(.self_ns),\(.avg_ns),\(.min_ns),\(.max_ns)"' | sort)" \
	"report --json"

# ---- folded: every distinct path with its self time, total time or calls -----------------------
for w in self total calls; do
	awk -v w="$w" '{ v[$2] += w == "self" ? $4 : w == "total" ? $3 : 1 }
		END { for (p in v) if (v[p]) printf "%s %d\n", p, v[p] }' "$T/calls" | sort >"$T/fold.want"
	"$ATF" export "$T/s" -F folded --weight "$w" -o "$T/fold.$w" || fail "export folded --weight $w"
	sort "$T/fold.$w" | diff "$T/fold.want" - >&2 || fail "folded --weight $w differs from the raw events"
done

# ---- graph: its whole text, times in its units (timefmt: 3 decimals, truncated) ----------------
# graph_want [FUNCTION]: the tree of call paths (below FUNCTION: the paths from its outermost
# calls on, added together), children by total time then name, drawn as graph draws it
graph_want() {
	awk -v only="${1:-}" '
	function fmt(ns,   i) {
		if (ns >= 1e9) return sprintf("%d.%03d s", int(ns / 1e9), int((ns % 1e9) / 1e6))
		if (ns >= 1e6) return sprintf("%d.%03d ms", int(ns / 1e6), int((ns % 1e6) / 1e3))
		if (ns >= 1e3) return sprintf("%d.%03d us", int(ns / 1e3), ns % 1e3)
		return sprintf("%d ns", ns)
	}
	function show(p, prefix, depth, last,   nk, k, i, j, tmp, kid, name, branch) {
		name = p; sub(/.*;/, "", name)
		branch = depth ? (last ? "└─" : "├─") : ""
		printf "%14s %14s %8d  %s%s%s\n", fmt(t[p]), fmt(s[p]), c[p], prefix, branch, name
		if (depth) prefix = prefix (last ? "  " : "│ ")
		nk = 0
		for (k in c) if (index(k, p ";") == 1 && index(substr(k, length(p) + 2), ";") == 0) kid[++nk] = k
		for (i = 2; i <= nk; i++) for (j = i; j > 1 && (t[kid[j]] > t[kid[j - 1]] ||
		     (t[kid[j]] == t[kid[j - 1]] && kid[j] < kid[j - 1])); j--) { tmp = kid[j]; kid[j] = kid[j - 1]; kid[j - 1] = tmp }
		for (i = 1; i <= nk; i++) show(kid[i], prefix, depth + 1, i == nk)
	}
	{ p = $2
	  if (only != "") { n = split(p, parts, ";"); for (i = 1; i <= n && parts[i] != only; i++) ;
	                    if (i > n) next; p = parts[i]; for (i++; i <= n; i++) p = p ";" parts[i] }
	  c[p]++; t[p] += $3; s[p] += $4; if (index(p, ";") == 0) root[p] = 1 }
	END { for (r in root) show(r, "", 0, 1) }' "$T/calls"
}
"$ATF" graph "$T/s" | tail -n +3 >"$T/graph.got"
graph_want | diff - "$T/graph.got" >&2 || fail "graph differs from the raw events"
"$ATF" graph "$T/s" recur | tail -n +3 >"$T/graph.recur"
graph_want recur | diff - "$T/graph.recur" >&2 || fail "graph below recur differs from the raw events"
assert_eq 4 "$(wc -l <"$T/graph.recur")" "graph below recur: four levels"
echo "ok: report (every sort key), folded (every weight) and graph match the raw events exactly"
