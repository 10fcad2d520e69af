#!/usr/bin/env bash
# record -- recursion 100 3: depth 100 recursion, three times: exact counts and depths, through
# call sites (the default: every level returns into its stub's probe) and with plain probes
# (--no-trampolines: the kernel's 64 pending return probes per thread).
source "$(dirname "$0")/lib.sh"
need_bpf

for mode in default --no-trampolines; do
	args=(); [ $mode = default ] || args=($mode)
	"$ATF" record "${args[@]}" -o "$T/s$mode" -f main -f recurse -- "$TARGETS/recursion" 100 3 2>"$T/err" \
		|| { cat "$T/err" >&2; fail "$mode: record failed"; }
	"$ATF" verify "$T/s$mode" >/dev/null || fail "$mode: verify"
	"$TOOLS/record_stats" "$T/s$mode" >"$T/stats"
	read -r _ _ _ threads _ events _ calls _ returns _ exc _ maxdepth _ lost _ <<<"$(grep '^process ' "$T/stats")"
	assert_eq 1 "$threads" "$mode: threads"
	assert_eq 602 "$events" "$mode: events (main + 3 x 100 recursions, call and return)"
	assert_eq 301 "$calls" "$mode: calls"
	if [ $mode = default ]; then
		# the recursive calls are redirected: each returns into its stub's probe B, no
		# return probe of the kernel's, so no depth limit
		assert_eq 301 "$returns" "$mode: returns"
		assert_eq 0 "$exc" "$mode: frames closed as unwound"
	else
		# The kernel keeps at most 64 pending return probes per thread (MAX_URETPROBE_DEPTH):
		# returns of frames nested deeper are never reported, and the BPF shadow stack closes
		# those frames as EXCEPTION ("unwound") when the first reported return below them
		# arrives. Here main and the outer 63 recursion levels (64 return probes) return
		# normally; the inner 37 of each recursion are closed unwound, all 37 by that one
		# return (a return that closed only some of them would miss its own frame under the
		# rest, and close it unwound too).
		assert_eq $((1 + 3 * 63)) "$returns" "$mode: returns"
		assert_eq $((3 * 37)) "$exc" "$mode: frames closed as unwound"
	fi
	assert_eq 0 "$(awk '$1 == "unbalanced" { print $3 }' "$T/stats")" "$mode: frames left open"
	assert_eq 100 "$maxdepth" "$mode: deepest call depth (main is 0, recurse 1..100)"
	assert_eq 0 "$lost" "$mode: lost events"
	assert_eq 300 "$(awk '$1 == "call" && $3 == "recurse" { print $4 }' "$T/stats")" "$mode: calls of recurse"
	# the innermost frame of each recursion, exactly: 100 levels of indentation after main (a
	# leaf that returned is "<dur> | ... recurse();", one closed unwound "      | ... recurse() {")
	"$ATF" dump "$T/s$mode" | normalise_dump >"$T/dump"
	assert_eq 3 "$(grep -cE "^(     |<dur>) \| $(printf '%200s' '')recurse\(\)( \{|;)\$" "$T/dump")" "$mode: calls at depth 100"
done
echo "ok"
