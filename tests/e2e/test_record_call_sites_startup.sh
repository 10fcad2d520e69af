#!/usr/bin/env bash
# record --call-sites of a launched Debian program, from its first instruction: each traced libc
# function is counted exactly as the plain probes (--no-trampolines) count it, start-up included.
# The child is run to its entry point (where the call sites are placed) while the recorder drains
# the ring, so the holds at its exec and at ld.so's hook get libc's probes attached before it
# runs on: no call of main, nor of libc's own start-up, comes before them. ls is counted with
# entry trampolines (--trampolines, placed at the same entry point) and by bpftrace too, in a run
# of its own (the resolvers ld.so runs while relocating, before libc's
# probes are attached at its debug-state hook, are left out of that check: see README, Known
# limits). The environment is pinned (env -i, LC_ALL=C) and each program reads fixed input.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
LIBC=$(readlink -f "$(ldd /usr/bin/ls | awk '$1 == "libc.so.6" { print $3 }')")
[ -f "$LIBC" ] || fail "cannot find the libc.so.6 of /usr/bin/ls"
PIN=(env -i PATH=/usr/bin:/bin LC_ALL=C)

# the files ls lists, and their parent, do not change while the sessions are written
D=$T/in/dir
mkdir -p "$D/sub"
for f in zeta alpha 'b c' .hidden mid-1 mid-10 mid-2 Upper lower.txt README; do : >"$D/$f"; done
printf '%s\n' pear apple 'fig tree' banana apple cherry 10 9 100 Zed zed >"$T/in/sort.in"

# counts SESSION: "FUNCTION CALLS" per function that was called, by name
counts() {
	"$ATF" report --csv -s name "$1" | awk -F, 'NR > 1 { gsub(/"/, "", $1); print $1, $2 }'
}

# compare NAME GLOB CMD...: CMD recorded with --call-sites and with --no-trampolines (libc's
# functions GLOB): the same output, and the same calls of each function
compare() {
	local name=$1 glob=$2 m
	shift 2
	for m in call-sites no-trampolines; do
		"${PIN[@]}" "$ATF" record -v --$m -o "$T/$name.$m" -f "libc.so.6:$glob" -- "$@" \
			>"$T/$name.$m.out" 2>"$T/$name.$m.err" </dev/null \
			|| { tail -n 5 "$T/$name.$m.err" >&2; fail "$name: record --$m failed"; }
		counts "$T/$name.$m" >"$T/$name.$m.counts"
	done
	cmp -s "$T/$name.call-sites.out" "$T/$name.no-trampolines.out" \
		|| fail "$name: the output under --call-sites differs from --no-trampolines'"
	[ "$(wc -l <"$T/$name.no-trampolines.counts")" -ge 2 ] \
		|| fail "$name: fewer than 2 functions called: $(cat "$T/$name.no-trampolines.counts")"
	diff "$T/$name.no-trampolines.counts" "$T/$name.call-sites.counts" >"$T/$name.diff" \
		|| { sed 's/^/  | /' "$T/$name.diff" >&2
		     fail "$name: calls per function differ between --no-trampolines (<) and --call-sites (>)"; }
	# the sites are placed at the entry, with libc's probes already attached
	assert_contains "$T/$name.call-sites.err" "^atftrace record: [1-9][0-9]* call sites redirected$" \
		"$name: call sites redirected at the entry"
}

compare ls 'str*' /usr/bin/ls "$D"
compare ls-l 'str*' /usr/bin/ls -la "$D"
compare sort 'str*' /usr/bin/sort "$T/in/sort.in"
compare bash 'str*' /usr/bin/bash -c "v=\$(ls $D); w=\${v//a/z}; echo \"\${#w}\"; case x\$w in *zlphz*) echo yes;; esac"
# every function of libc: its own start-up (the constructors before main) included
compare true '*' /usr/bin/true

# entry trampolines (--trampolines) place their jmps at the same entry point: each function the
# plain probes count is counted the same (they also trace some that plain probes cannot)
"${PIN[@]}" "$ATF" record --trampolines -o "$T/ls.tramp" -f 'libc.so.6:str*' -- /usr/bin/ls "$D" >/dev/null \
	2>"$T/ls.tramp.err" </dev/null || { tail -n 5 "$T/ls.tramp.err" >&2; fail "ls: record (trampolines) failed"; }
counts "$T/ls.tramp" >"$T/ls.tramp.counts"
join <(sort "$T/ls.no-trampolines.counts") <(sort "$T/ls.tramp.counts") | awk '$2 == $3' | cut -d' ' -f1,2 \
	| sort >"$T/ls.tramp.same"
diff <(sort "$T/ls.no-trampolines.counts") "$T/ls.tramp.same" >"$T/ls.tramp.diff" \
	|| { sed 's/^/  | /' "$T/ls.tramp.diff" >&2
	     fail "ls: functions counted otherwise with trampolines (< the plain probes' count)"; }

# bpftrace's count of the same functions of ls (no resolver: ld.so calls those while it relocates)
probes=
while read -r fn n; do
	case $fn in *_ifunc) continue ;; esac
	probes="$probes${probes:+,}uprobe:$LIBC:$fn"
done <"$T/ls.no-trampolines.counts"
"${PIN[@]}" timeout 120 bpftrace -o "$T/bt.txt" -e "$probes /pid == cpid/ { @[probe] = count(); }" \
	-c "/usr/bin/ls $D" >/dev/null 2>"$T/bt.err" \
	|| { cat "$T/bt.err" >&2; fail "bpftrace counting ls's calls failed"; }
sed -n "s|^@\[uprobe:$LIBC:\(.*\)\]: \([0-9]*\)$|\1 \2|p" "$T/bt.txt" | sort >"$T/bt.counts"
grep -v '_ifunc ' "$T/ls.call-sites.counts" | sort >"$T/ls.expected"
diff "$T/bt.counts" "$T/ls.expected" >"$T/bt.diff" \
	|| { sed 's/^/  | /' "$T/bt.diff" >&2; fail "ls: calls per function differ between bpftrace (<) and --call-sites (>)"; }
echo "ok: --call-sites counts ls, ls -la, sort, bash -c and true (every libc function) as the plain probes do, and ls as entry trampolines and bpftrace do"
