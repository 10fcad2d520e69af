#!/usr/bin/env bash
# C++ exceptions through traced frames when the C++ unwinder is not a DT_NEEDED library of the
# program the recorder starts: a launched wrapper (a #! script, env, sh -c 'exec ...', a shell
# that forks the program under --follow-fork), a C program linked against a C++ library, a C
# program that dlopens one, and a program with the unwinder linked in (static libgcc and
# libstdc++). The unwind hooks must be on the unwinder the process maps, before it can throw
# (user/record/record_unwinders.c); without them the target dies in std::terminate. Each case
# runs with entry trampolines and with --no-trampolines, and checks the target's exact output
# (as untraced), its exit status 0, and exact calls and EXCEPTION events.
source "$(dirname "$0")/lib.sh"
need_bpf
N=3
CXX=$TARGETS/cxx_throw
LIB=$TARGETS/libcxxthrow.so
printf '#!/bin/sh\nexec "%s" "$@"\n' "$CXX" >"$T/wrap.sh"
chmod +x "$T/wrap.sh"


# case NAME "FUNCS" [record options] -- CMD...: record CMD with -f FUNCS (each a traced function
# of the throw, outermost last) under both trampoline settings
case_() {
	local name=$1 funcs=$2 want
	shift 2
	local opts=() cmd
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	cmd=("$@")
	want=$("${cmd[@]}") || fail "$name: the untraced run failed"
	for tr in "" --no-trampolines; do
		local s=$name${tr:+_plain} st=0 f
		local fargs=()
		for f in $funcs; do fargs+=(-f "$f"); done
		"$ATF" record -o "$T/$s" $tr "${opts[@]}" "${fargs[@]}" -- "${cmd[@]}" \
			>"$T/$s.out" 2>"$T/$s.err" || st=$?
		if grep -E "the target|terminate|cannot" "$T/$s.err" >&2 || [ $st != 0 ]; then
			fail "$s: the target died, or record failed (status $st)"
		fi
		assert_eq "$want" "$(cat "$T/$s.out")" "$s: target output"
		check_throw_session "$s" $N
	done
}

case_ wrapper 'thrower_*' -- "$T/wrap.sh" $N
# (--allow-missing: env and sh themselves have no thrower_*; the program they exec has)
case_ env 'thrower_*' --allow-missing -- env "$CXX" $N
case_ sh_exec 'thrower_*' --allow-missing -- sh -c 'exec "$0" "$1"' "$CXX" $N
case_ follow 'thrower_*' --allow-missing --follow-fork -- sh -c '"$0" "$1"; echo after' "$CXX" $N
case_ c_main 'c_* libcxxthrow.so:lib_thrower_*' -- "$TARGETS/cxx_c_main" $N
case_ dlopen 'c_* libcxxthrow.so:lib_thrower_*' -- "$TARGETS/cxx_dlopen" "$LIB" $N
case_ static 'thrower_*' -- "$TARGETS/cxx_throw_static" $N
echo "ok"
