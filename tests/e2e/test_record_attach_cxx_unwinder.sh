#!/usr/bin/env bash
# record -p on a process that has no C++ unwinder mapped yet and gets one after the attach: a
# shell (a #! script, sh -c) that then execs a C++ program directly or through env, a shell
# that forks one under --follow-fork, a C program that dlopens a C++ library, a program with
# the unwinder linked in; and a C program linked against a C++ library (mapped at the attach).
# The unwind hooks must be on that unwinder before the program can throw through a traced
# frame (user/record/record_unwinders.c); without them it dies in std::terminate. Each target
# prints "pid P" and waits on a fifo, so the recorder is attached (--ready-file) before it goes
# on; each case runs with call sites (the default: a process that maps the unwinder later gets
# its redirected calls written back first), with --trampolines and with --no-trampolines, and
# checks the target's exact output (as untraced), its exit status 0, and exact calls and
# EXCEPTION events.
source "$(dirname "$0")/lib.sh"
need_bpf
N=3
CXX=$TARGETS/cxx_throw
LIB=$TARGETS/libcxxthrow.so
target="" rec=""
cleanup() {
	[ -n "$target" ] && kill -9 "$target" 2>/dev/null
	[ -n "$rec" ] && kill -9 "$rec" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
printf '#!/bin/sh\necho pid $$\nread go < "$1"\nexec "%s" %d\n' "$CXX" $N >"$T/wrap.sh"
chmod +x "$T/wrap.sh"


# start NAME CMD...: run CMD (@FIFO@ in it: the fifo it waits on) with stdout on fd 4; sets
# target, and checks its first line, "pid P"
start() {
	local name=$1 word pid
	shift
	mkfifo "$T/$name.go" "$T/$name.pipe"
	"${@//@FIFO@/$T/$name.go}" >"$T/$name.pipe" &
	target=$!
	exec 4<"$T/$name.pipe"
	read -r -u 4 word pid || fail "$name: no first line from the target"
	assert_eq "pid $target" "$word $pid" "$name: first line"
}
# finish NAME: let the target go on; its other lines into NAME.out, its status checked
finish() {
	local st=0
	echo go >"$T/$1.go"
	cat <&4 >"$T/$1.out"
	exec 4<&-
	wait "$target" || st=$?
	target=""
	assert_eq 0 $st "$1: target exit status"
}

# case NAME "FUNCS" [record options] -- CMD...: record -p CMD with -f FUNCS (the three traced
# functions of each throw) under each way in
case_() {
	local name=$1 funcs=$2 f
	shift 2
	local opts=() fargs=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	for f in $funcs; do fargs+=(-f "$f"); done
	start "$name.untraced" "$@"
	finish "$name.untraced"
	for tr in "" --trampolines --no-trampolines; do
		local s=$name${tr:+_${tr#--}} st=0
		start "$s" "$@"
		mkfifo "$T/$s.ready"
		"$ATF" record -p "$target" -o "$T/$s" $tr "${opts[@]}" "${fargs[@]}" \
			--ready-file "$T/$s.ready" 2>"$T/$s.err" &
		rec=$!
		timeout 60 cat "$T/$s.ready" >/dev/null || { cat "$T/$s.err" >&2; fail "$s: recorder not ready"; }
		finish "$s"
		wait $rec || st=$?
		rec=""
		if grep -E "terminate|cannot" "$T/$s.err" >&2 || [ $st != 0 ]; then
			fail "$s: record -p failed (status $st)"
		fi
		assert_eq "$(cat "$T/$name.untraced.out")" "$(cat "$T/$s.out")" "$s: target output"
		check_throw_session "$s" $N
	done
}

WAIT='echo pid $$; read go < "$1";'
case_ wrapper "$CXX:thrower_*" -- "$T/wrap.sh" @FIFO@
case_ env "$CXX:thrower_*" -- sh -c "$WAIT"' exec env "$0" '$N "$CXX" @FIFO@
case_ sh_exec "$CXX:thrower_*" -- sh -c "$WAIT"' exec "$0" '$N "$CXX" @FIFO@
case_ follow "$CXX:thrower_*" --follow-fork -- sh -c "$WAIT"' "$0" '$N'; echo after' "$CXX" @FIFO@
case_ c_main 'c_* libcxxthrow.so:lib_thrower_*' -- "$TARGETS/cxx_c_main" $N @FIFO@
case_ dlopen 'c_* libcxxthrow.so:lib_thrower_*' -- "$TARGETS/cxx_dlopen" "$LIB" $N @FIFO@
case_ static "$TARGETS/cxx_throw_static:thrower_*" -- \
	sh -c "$WAIT"' exec "$0" '$N "$TARGETS/cxx_throw_static" @FIFO@
echo "ok"
