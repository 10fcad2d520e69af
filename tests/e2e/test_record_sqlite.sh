#!/usr/bin/env bash
# A real Debian program: sqlite3 traced over libsqlite3.so.0's sqlite3_* functions. Per-function
# call counts must equal an independent count by bpftrace uprobes on the same functions.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (scripts/deps.sh)"
SQLITE=$(command -v sqlite3)
LIB=$(ldd "$SQLITE" | awk '$1 ~ /^libsqlite3\.so/ { print $3 }')
[ -n "$LIB" ] && LIB=$(readlink -f "$LIB") || fail "sqlite3 does not link libsqlite3"

cat >"$T/q.sql" <<'SQL'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 200)
INSERT INTO t(b) SELECT printf('row %d', x) FROM n;
SELECT count(*), sum(length(b)) FROM t;
SQL
# no spaces in the command: bpftrace 0.17 -c splits on them
CMD="$SQLITE -batch -init $T/q.sql :memory: .tables"

"$ATF" record -o "$T/s" -f 'libsqlite3.so.0:sqlite3_*' -- $CMD >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
assert_eq 0 "$(awk '$1 == "process" { print $16 }' "$T/stats")" "lost events"
assert_eq 0 "$(awk '$1 == "unbalanced" { print $3 }' "$T/stats")" "frames left open"
awk '$1 == "call" { print $3, $4 }' "$T/stats" | sort >"$T/ours"
[ "$(wc -l <"$T/ours")" -ge 10 ] || fail "fewer than 10 sqlite3_* functions called: $(cat "$T/ours")"

# the functions we probed (the manifest's symbols), and bpftrace's count for each
python3 -c 'import json,sys,glob; m=json.load(open(glob.glob(sys.argv[1]+"/pid_*/manifest.json")[0])); print("\n".join(s["name"] for s in m["symbols"]))' "$T/s" | sort >"$T/probed"
timeout 300 bpftrace -q -e "uprobe:$LIB:sqlite3_* /pid == cpid/ { @[probe] = count(); }" -c "$CMD" </dev/null >"$T/bt" 2>"$T/bterr" || { cat "$T/bterr" >&2; fail "bpftrace failed"; }
sed -n 's/^@\[uprobe:.*:\([^:]*\)\]: \([0-9]*\)$/\1 \2/p' "$T/bt" | sort >"$T/theirs.all"
join "$T/probed" "$T/theirs.all" >"$T/theirs"   # aliases and unprobe-able names are not ours to count
[ -s "$T/theirs" ] || fail "bpftrace counted nothing"
diff -u "$T/theirs" "$T/ours" >&2 || fail "per-function counts differ from bpftrace (- bpftrace, + atftrace)"
echo "ok: $(wc -l <"$T/ours") functions, $(awk '{ s += $2 } END { print s }' "$T/ours") calls, equal to bpftrace"
