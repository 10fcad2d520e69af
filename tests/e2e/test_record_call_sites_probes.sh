#!/usr/bin/env bash
# record --call-sites holds one probe per function and kind, never one per call site
# (user/patch/callsite_plan.h: each function's block E_f, R_f, T_f; the indirect stubs' shared
# return block R). tests/targets/cs_many: cm_f and cm_g called from 32 sites each, cm_h from 2;
# cm_h tail-calls cm_f and cm_g (jne, jmp); cm_ind calls cm_f through `call *cm_ptr(%rip)`.
#   - `record -v` says 68 sites of 3 functions (2 of them tail calls) and 1 indirect site;
#   - the recorder's own uprobe_multi links of the call-site programs (its /proc/PID/fdinfo:
#     uprobe_cnt, and the program's name through bpftool) hold exactly 3 entry probes (E_f of
#     cm_f, cm_g, cm_h), 4 return probes (R_f of the three, and the indirect stubs' R) and 2 tail
#     entries (T_f of cm_f, cm_g): 2 * 3 functions + 1 + 2 = 9, where a probe pair per site made
#     138;
#   - exact calls per function, the same as with plain probes (--no-trampolines), and the
#     target's output the untraced run's.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
P=$TARGETS/cs_many
[ -x "$P" ] || fail "build first: make OUTPUT=$OUTPUT targets"
command -v bpftool >/dev/null || fail "bpftool missing (a build dependency)"
N=500
SPEC=(-f 'cs_many:cm_f' -f 'cs_many:cm_g' -f 'cs_many:cm_h')

# counts SESSION: "name calls" per function, sorted
counts() { "$ATF" report "$1" | awk 'NR > 2 { print $13, $5 }' | sort; }

# site_probes PID: "entry E return R tail T", the probes of PID's uprobe_multi links of the
# call-site programs (atf_site_*; names are cut to 15 characters)
site_probes() {
	python3 - "$1" <<'PY'
import json, os, re, subprocess, sys
pid = int(sys.argv[1])
n = {"entry": 0, "return": 0, "tail": 0}
for fd in os.listdir("/proc/%d/fdinfo" % pid):
    try:
        info = open("/proc/%d/fdinfo/%s" % (pid, fd)).read()
    except OSError:
        continue
    if not re.search(r"^link_type:\s*uprobe_multi$", info, re.M):
        continue
    prog = int(re.search(r"^prog_id:\s*(\d+)", info, re.M).group(1))
    cnt = int(re.search(r"^uprobe_cnt:\s*(\d+)", info, re.M).group(1))
    name = json.loads(subprocess.run(["bpftool", "prog", "show", "id", str(prog), "--json"],
                                     capture_output=True, text=True, check=True).stdout)["name"]
    if not name.startswith("atf_site_"):
        continue
    kind = "tail" if "tail" in name else "return" if "ret" in name else "entry"
    n[kind] += cnt
print("entry %d return %d tail %d" % (n["entry"], n["return"], n["tail"]))
PY
}

echo $N >"$T/in"
"$P" - <"$T/in" >"$T/plain.out" || fail "the untraced run failed"

mkfifo "$T/fifo"
"$ATF" record --call-sites -v -o "$T/cs" --ready-file "$T/ready" "${SPEC[@]}" -- "$P" - \
	<"$T/fifo" >"$T/cs.out" 2>"$T/cs.err" &
rec=$!
exec 3>"$T/fifo"
for _ in $(seq 600); do
	[ -e "$T/ready" ] && break
	kill -0 $rec 2>/dev/null || { cat "$T/cs.err" >&2; fail "record --call-sites ended before it was ready"; }
	sleep 0.1
done
[ -e "$T/ready" ] || fail "record --call-sites never became ready"
probes=$(site_probes $rec) || fail "cannot read the recorder's links"
echo $N >&3
exec 3>&-
wait $rec || { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }

assert_contains "$T/cs.err" "cs_many: 68 call sites of 3 functions redirected \(68 direct, 0 through the PLT; 0 left out" \
	"the 66 direct calls of cm_f, cm_g and cm_h, and cm_h's 2 tail calls"
assert_contains "$T/cs.err" "cs_many: 2 of them tail calls" "cm_h's jne cm_f and jmp cm_g"
assert_contains "$T/cs.err" "cs_many: 1 indirect call site redirected, 3 functions in the lookup table" \
	"cm_ind's call *cm_ptr(%rip)"
assert_eq "entry 3 return 4 tail 2" "$probes" "the session's call-site probes: per function, not per site"
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's"
"$ATF" record --no-trampolines -o "$T/np" "${SPEC[@]}" -- "$P" - <"$T/in" >/dev/null 2>"$T/np.err" \
	|| { cat "$T/np.err" >&2; fail "record --no-trampolines failed"; }
counts "$T/cs" >"$T/cs.calls"
counts "$T/np" >"$T/np.calls"
diff "$T/np.calls" "$T/cs.calls" >&2 || fail "calls per function differ between --call-sites and plain probes"
assert_eq "$((2 * N))" "$(awk '$1 == "cm_h" { print $2 }' "$T/cs.calls")" "calls of cm_h"
assert_eq "$((67 * N))" "$(awk '$1 != "cm_h" { s += $2 } END { print s }' "$T/cs.calls")" \
	"calls of cm_f and cm_g: 64 direct, 2 tail and 1 indirect per round"
echo "ok: --call-sites: $probes probes for 69 sites of 3 functions; exact counts"
