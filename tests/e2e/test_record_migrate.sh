#!/usr/bin/env bash
# record -- migrate 4 200: four threads share the CPUs and change CPU (sched_setaffinity) inside
# their traced frames, so a thread's state moves between the per-CPU slots and its task storage
# while frames are open, and the slots are handed from thread to thread. Every thread must have
# exactly its own calls, each at its own depths, in its own order: a slot whose state was lost,
# left stale, or taken by another thread shows as a wrong count, depth or tree.
source "$(dirname "$0")/lib.sh"
need_bpf
NT=4 R=200

"$ATF" record -o "$T/s" -f 'mig_*' -- "$TARGETS/migrate" $NT $R 2>"$T/err" || { cat "$T/err" >&2; fail "record failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
read -r _ _ _ threads _ events _ calls _ returns _ exc _ maxdepth _ lost _ <<<"$(grep '^process ' "$T/stats")"
assert_eq 0 "$lost" "lost events"
assert_eq 0 "$exc" "exceptions (frames closed as unwound)"
assert_eq $NT "$threads" "thread directories"
# thread k: mig_round, k + 1 mig_nest, mig_leaf per round
assert_eq $((R * (3 * NT + NT * (NT - 1) / 2) * 2)) "$events" "events"
assert_eq $((NT + 1)) "$maxdepth" "deepest call depth"
assert_eq 0 "$(awk '$1 == "unbalanced" { print $3 }' "$T/stats")" "frames left open"

# one call tree of thread k's round, as dump prints it without its time columns
round_tree() {   # k
	local k=$1 i pad=""
	echo "mig_round() {"
	for ((i = 0; i <= k; i++)); do
		pad="$pad  "
		echo "${pad}mig_nest() {"
	done
	echo "${pad}  mig_leaf();"
	for ((i = k; i >= 0; i--)); do
		echo "${pad}} /* mig_nest */"
		pad=${pad%  }
	done
	echo "} /* mig_round */"
}

seen=""
for id in $(awk '$1 == "thread" { print $3 }' "$T/stats"); do
	tcalls=$(awk -v id="$id" '$1 == "thread" && $3 == id { print $7 }' "$T/stats")
	k=$((tcalls / R - 3))
	[ $k -ge 0 ] && [ $k -lt $NT ] && [ $((tcalls % R)) = 0 ] || fail "thread $id: $tcalls calls fit no thread"
	seen="$seen $k"
	"$ATF" dump "$T/s" --thread "$id" | sed -n 's/^[^|]*| //p' >"$T/tree.$id"
	for ((r = 0; r < R; r++)); do round_tree $k; done >"$T/want.$id"
	cmp -s "$T/want.$id" "$T/tree.$id" || {
		diff "$T/want.$id" "$T/tree.$id" | head -n 20 >&2
		fail "thread $id (k=$k): call tree differs"
	}
done
assert_eq "0 1 2 3" "$(printf "%s\n" $seen | sort -n | xargs)" "one thread of each depth"
echo "ok"
