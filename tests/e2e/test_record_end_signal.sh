#!/usr/bin/env bash
# A target killed by a signal: the manifest's end_reason names the signal, both for a launched
# target (its wait status) and for one attached with -p (the exit code the kernel gave its last
# thread), and a target that exits normally still says "target exited".
source "$(dirname "$0")/lib.sh"
need_bpf

# run_case MODE SIGNAL: record attach_loop (launched or -p), then kill it with SIGNAL (or "q")
run_case() {
	local mode=$1 sig=$2 dir="$T/$1-$2" target rec
	rm -f "$T/cmd" "$T/out" "$T/ready"
	mkfifo "$T/cmd" "$T/out" "$T/ready"
	exec 4<>"$T/out"
	if [ "$mode" = launched ]; then
		"$ATF" record -o "$dir" -f loop_work --ready-file "$T/ready" -- \
			"$TARGETS/attach_loop" "$T/cmd" >"$T/out" 2>"$T/err" &
		rec=$!
		timeout 60 cat "$T/ready" >/dev/null || { cat "$T/err" >&2; fail "the recorder never became ready"; }
		read -r -t 120 -u 4 _ target || fail "no pid from attach_loop"
	else
		"$TARGETS/attach_loop" "$T/cmd" >"$T/out" &
		target=$!
		read -r -t 120 -u 4 _ _ || fail "no pid from attach_loop"
		"$ATF" record -p "$target" -o "$dir" -f loop_work --ready-file "$T/ready" 2>"$T/err" &
		rec=$!
		timeout 60 cat "$T/ready" >/dev/null || { cat "$T/err" >&2; fail "the recorder never became ready"; }
	fi
	exec 3<>"$T/cmd"
	echo 3 >&3
	read -r -t 120 -u 4 line; assert_eq "done 3" "$line" "ack"
	if [ "$sig" = q ]; then echo q >&3; else kill -"$sig" "$target"; fi
	exec 3>&- 4<&-
	[ "$mode" = launched ] || wait "$target" 2>/dev/null || true
	# a launched target killed by signal N: the recorder exits 128 + N, as a shell would
	local rc=0 want=0
	wait "$rec" || rc=$?
	[ "$mode" = launched ] && [ "$sig" != q ] && want=$((128 + $(kill -l "$sig")))
	[ "$rc" = "$want" ] || { cat "$T/err" >&2; fail "$mode $sig: the recorder exited $rc, expected $want"; }
	jq -r .end_reason "$dir/pid_$target/manifest.json"
}

assert_eq "target killed by SIGKILL" "$(run_case launched KILL)" "launched, kill -9"
assert_eq "target killed by SIGSEGV" "$(run_case launched SEGV)" "launched, kill -SEGV"
assert_eq "target killed by SIGTERM" "$(run_case attached TERM)" "-p, kill -TERM"
assert_eq "target exited" "$(run_case attached q)" "-p, normal exit"
assert_eq "target exited" "$(run_case launched q)" "launched, normal exit"
echo "ok"
