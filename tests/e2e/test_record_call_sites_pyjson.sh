#!/usr/bin/env bash
# record --call-sites on Debian's Python (stripped: its exported functions, every one traced)
# running json deeper than the kernel's 64 pending uretprobes per thread:
#   - a structure nested D levels, dumped with indent= (the pure-Python encoder: one generator
#     per container, each resumed through `yield from`, i.e. _PyEval_EvalFrameDefault ->
#     PyIter_Send -> _PyEval_EvalFrameDefault ... D times), whose default= hook runs the C
#     scanner of _json (dlopen'd from lib-dynload) at every depth: json.loads of a small array;
#   - the result parsed and dumped again by _json (its calls into the interpreter go through
#     its PLT: redirected once a module is mapped after it, here _decimal).
# Asserted, against counts made independently (bpftrace in a separate run, and the structure
# itself, counted in Python by the workload):
#   - the program's output is the untraced run's;
#   - calls of PyIter_Send and PyList_New: bpftrace's;
#   - PyIter_Send nests D + 6 deep (D containers, the default's two delegations, the leaf's four
#     containers), the call depth passes 64, and no frame ends as unwound;
#   - every PyIter_Send's parent is _PyEval_EvalFrameDefault; in the json window, the arrays
#     _json's scanner makes (PyList_New under _PyObject_MakeTpCall, the scanner's caller) are
#     exactly the arrays the structure holds.
# With plain probes (PYJSON_MODE=--no-trampolines runs these same assertions) frames past 64
# end as unwound and later calls hang on wrong parents: "no frame ends as unwound" fails (43,716
# here), and so does the arrays' parent (495 of 600 under _PyObject_MakeTpCall).
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
MODE=${PYJSON_MODE:---call-sites}
PY=/usr/bin/python3.11
[ -x "$PY" ] || fail "$PY is missing (Debian's python3: scripts/deps.sh installs it)"
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
D=60

cat >"$T/j.py" <<'PY'
import json, sys
import decimal  # a module mapped after _json: its PLT calls are redirected then
sys.setrecursionlimit(10000)
D = int(sys.argv[1])
LEAF = '[%d, [2, {"a": [3]}]]'


class Leaf:
    def __init__(self, i):
        self.i = i


def default(o):
    return json.loads(LEAF % o.i)


def arrays(v):
    # without recursion: a deep recursion of sum() over generators calls through type slots
    # (indirect calls, not redirected) and would pass 64 pending uretprobes by itself
    n, todo = 0, [v]
    while todo:
        v = todo.pop()
        if isinstance(v, list):
            n += 1
            todo.extend(v)
        elif isinstance(v, dict):
            todo.extend(v.values())
    return n


x = 0
for i in range(D):
    x = [i, x, Leaf(i)] if i % 2 else {"k": x, "n": i, "l": Leaf(i)}
sys.getsizeof(0)  # _PySys_GetSizeOf, called by nothing else: the json window's first mark
s = json.dumps(x, indent=1, default=default)
y = json.loads(s)
c = json.dumps(y)
z = json.loads(c)
sys.getsizeof(0)  # and its last
assert z == y
# the arrays _json's scanner parsed in the window: D leaves of 3 (default=), and y's twice
print("arrays", 3 * D + 2 * arrays(y))
print(len(s), len(c), hash(s))
PY
# the same environment for every run: counts of the interpreter's startup do not vary
pyenv=(env -i PATH=/usr/bin:/bin PYTHONHASHSEED=0)
"${pyenv[@]}" "$PY" -s -B "$T/j.py" $D >"$T/plain.out" || fail "the untraced run failed"
arrays=$(awk '$1 == "arrays" { print $2 }' "$T/plain.out")
[ "$arrays" -gt $((3 * D)) ] || fail "the workload counted $arrays arrays"

# ---- independent counts: bpftrace's uprobes, in a run of its own -------------------------------
"${pyenv[@]}" timeout 120 bpftrace -q -e "
	uprobe:$PY:PyIter_Send /pid == cpid/ { @send = count(); }
	uprobe:$PY:PyList_New /pid == cpid/ { @list = count(); }" \
	-c "$PY -s -B $T/j.py $D" >"$T/bt.out" 2>&1 || { cat "$T/bt.out" >&2; fail "bpftrace run failed"; }
bt_send=$(awk '$1 == "@send:" { print $2 }' "$T/bt.out")
bt_list=$(awk '$1 == "@list:" { print $2 }' "$T/bt.out")
[ -n "$bt_send" ] && [ -n "$bt_list" ] || { cat "$T/bt.out" >&2; fail "no counts from bpftrace"; }

# ---- the recording ---------------------------------------------------------------------------------
"${pyenv[@]}" "$ATF" record "$MODE" -v -o "$T/s" -f "$PY:*" -- "$PY" -s -B "$T/j.py" $D \
	>"$T/s.out" 2>"$T/s.err" || { cat "$T/s.err" >&2; fail "record $MODE failed"; }
cmp -s "$T/plain.out" "$T/s.out" || fail "the output differs from the untraced run's: $(diff "$T/plain.out" "$T/s.out" | head -5)"
if [ "$MODE" = --call-sites ]; then
	assert_contains "$T/s.err" "python3.11: [1-9][0-9]{3,} call sites of [1-9][0-9]* functions redirected" \
		"the interpreter's direct calls redirected"
	assert_contains "$T/s.err" "_json[^ ]*\.so \(its calls into the traced modules\): [1-9][0-9]* call sites of [1-9][0-9]* functions redirected \(0 direct, [1-9][0-9]* through the PLT" \
		"_json's PLT calls redirected once _decimal is mapped"
fi
"$ATF" verify "$T/s" >/dev/null || fail "verify"

# the call tree of the dump: calls, parent -> child edges (in the json window too: between the
# two _PySys_GetSizeOf calls), unwound frames, the deepest nesting of each function
"$ATF" dump "$T/s" | awk '
	/^#/ { next }
	{
		i = index($0, "| "); if (!i) next
		body = substr($0, i + 2); match(body, /^ */); d = RLENGTH / 2; body = substr(body, RLENGTH + 1)
		if (body ~ /^} \/\* /) { split(body, w, " "); if (body ~ /\(unwound\)$/) unw++; open[w[3]]--; next }
		n = body; sub(/\(.*/, "", n)
		if (n == "_PySys_GetSizeOf") win++
		calls[n]++; p = d ? st[d - 1] : "-"; edge[p " " n]++; wedge[win " " p " " n]++
		if (d > maxd) maxd = d
		if (body ~ /\{$/) { st[d] = n; if (++open[n] > nest[n]) nest[n] = open[n] }
	}
	END {
		for (f in calls) print "calls", f, calls[f]
		for (e in edge) print "edge", e, edge[e]
		for (e in wedge) print "wedge", e, wedge[e]
		for (f in nest) print "nest", f, nest[f]
		print "unwound", unw + 0; print "maxdepth", maxd + 0; print "marks", win + 0
	}' | sort >"$T/tree"
get() { awk -v k="$1" -v a="$2" -v b="${3:-}" -v c="${4:-}" '$1 == k && $2 == a && (b == "" || $3 == b) &&
	(c == "" || $4 == c) { v = $NF } END { print v + 0 }' "$T/tree"; }
marks=$(awk '$1 == "marks" { print $2 }' "$T/tree")
assert_eq 2 "$marks" "the json window's marks (calls of _PySys_GetSizeOf)"

assert_eq "$bt_send" "$(get calls PyIter_Send)" "calls of PyIter_Send (bpftrace's count)"
assert_eq "$bt_list" "$(get calls PyList_New)" "calls of PyList_New (bpftrace's count)"
assert_eq $((D + 6)) "$(get nest PyIter_Send)" "PyIter_Send frames nested at once"
depth=$(awk '$1 == "maxdepth" { print $2 }' "$T/tree")
[ "$depth" -gt 64 ] || fail "the call depth reached $depth, not past 64"
unw=$(awk '$1 == "unwound" { print $2 }' "$T/tree")
assert_eq 0 "$unw" "frames ended as unwound ($MODE)"
assert_eq "$bt_send" "$(get edge _PyEval_EvalFrameDefault PyIter_Send)" "PyIter_Send calls whose parent is the eval loop"
assert_eq "$arrays" "$(get wedge $((marks - 1)) _PyObject_MakeTpCall PyList_New)" \
	"arrays _json's scanner made under its caller _PyObject_MakeTpCall in the json window (the structure's)"
echo "ok: Python json $D deep ($MODE): depth $depth, exact calls, parents and no unwound frame"
