# Helpers of the call-site rows tests (test_call_sites_rows_*.sh); source after lib.sh.
# Rows are numbered as docs/design-call-sites.md's "Row by row" table lists them, without the
# two with tests of their own ("recorder kill -9", "nesting deeper than 64"): 1 bpftrace,
# 2 perf probe, 3 vfork, 4 int 0x80 and an untouched attr page, 5 ring full at fork,
# 6 80 children, 7 CLONE_VM, 8 gdb at the end, 9 kill -9 during a registration, 10 the user's
# stop, 11 perf stat 'sched:*', 12 tracefs.
# Each test runs the rows of docs/design-call-sites.md's "Row by row" table that ROWS lists
# (default: all of the file's); ROWS_MODE is the recording's way in (default --call-sites;
# ROWS_MODE=--trampolines runs the same scenario on entry trampolines, where the rows once
# failed). The target is a private copy of cs_rows, so that only this test's processes run it.
MODE=${ROWS_MODE:---call-sites}
CR=$T/cs_rows
cp "$TARGETS/cs_rows" "$CR" || fail "build first: make OUTPUT=$OUTPUT targets"
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"

# row_on N: is row N to run?
row_on() { [ -z "${ROWS:-}" ] || [[ " $ROWS " == *" $1 "* ]]; }

# sym_off BIN SYM: SYM's file offset in BIN (what a uprobe names)
sym_off() {
	python3 - "$1" "$2" <<'PY'
import subprocess, sys
out = subprocess.check_output(["readelf", "-Ws", "--program-headers", sys.argv[1]], text=True)
for l in out.splitlines():
    a = l.split()
    if a[:1] == ["LOAD"] and "E" in a[6:-1]:
        foff, vaddr = int(a[1], 16), int(a[2], 16)
    if a[-1:] == [sys.argv[2]] and len(a) == 8:
        addr = int(a[1], 16)
print(hex(addr - vaddr + foff))
PY
}
SUB_OFF=$(sym_off "$CR" tr_sub)

# mem_byte PID FILEOFF: the byte of PID's mapping of $CR at file offset FILEOFF, in hex
mem_byte() {
	python3 - "$1" "$2" "$CR" <<'PY'
import os, sys
pid, off, path = sys.argv[1], int(sys.argv[2], 0), os.path.realpath(sys.argv[3])
ino = os.stat(path).st_ino
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
    for line in maps:
        a = line.split()
        lo, hi = (int(x, 16) for x in a[0].split("-"))
        if len(a) >= 6 and int(a[4]) == ino and int(a[2], 16) <= off < int(a[2], 16) + hi - lo:
            mem.seek(lo + off - int(a[2], 16)); print(mem.read(1).hex()); break
PY
}

# wait_int3 PID FILEOFF WHAT: until another tool's breakpoint is in PID's text there (bounded)
wait_int3() {
	local i
	for i in $(seq 600); do
		alive "$1" "$3"
		[ "$(mem_byte "$1" "$2" 2>/dev/null)" != cc ] || return 0
		sleep 0.05
	done
	fail "$3: no int3 at file offset $2 of process $1 after 30 s"
}

# rows_record NAME PID [OPTIONS...]: record $MODE -p PID (tr_* functions, -v) into $T/NAME, its
# stderr in $T/NAME.err; returns once the recording is ready; sets REC
rows_record() {
	local name=$1 pid=$2
	shift 2
	mkfifo "$T/$name.ready"
	"$ATF" record $MODE -v -p "$pid" -o "$T/$name" -f 'tr_*' --ready-file "$T/$name.ready" "$@" \
		2>"$T/$name.err" &
	REC=$!
	timeout 60 cat "$T/$name.ready" >/dev/null || { cat "$T/$name.err" >&2; fail "$name: record -p never became ready"; }
	rows_redirected "$name"
}

# rows_redirected NAME: the recording NAME redirected tr_sub's calls (--call-sites), or entered
# it through a trampoline (--trampolines)
rows_redirected() {
	case $MODE in
	--call-sites) assert_contains "$T/$1.err" "cs_rows: [1-9][0-9]* call sites of 3 functions redirected" \
		"$1: the calls of tr_sub, tr_mark and tr_done redirected" ;;
	--trampolines) assert_contains "$T/$1.err" "cs_rows: 1 function through trampolines" \
		"$1: tr_sub through a trampoline" ;;
	esac
}

# rows_launch NAME ARGS...: record $MODE the launched $CR ARGS (tr_* functions, -v) into
# $T/NAME, its stderr in $T/NAME.err, the target's output in $T/NAME.out; sets REC. The caller
# waits for the target's READY file.
rows_launch() {
	local name=$1
	shift
	"$ATF" record $MODE -v -o "$T/$name" -f 'tr_*' -- "$CR" "$@" 2>"$T/$name.err" >"$T/$name.out" &
	REC=$!
}

# launched_pid NAME: the pid of the command that rows_launch NAME launched
launched_pid() { sed -n 's/^atftrace record: launched \([0-9]*\):.*/\1/p' "$T/$1.err"; }

# wait_file FILE WHAT: until FILE exists (bounded)
wait_file() {
	timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.05; done' _ "$1" || fail "$2: no $1 after 60 s"
}

# proc_state PID: its state letter in /proc/PID/stat (R, S, T, Z, ...)
proc_state() { awk '{ print $3 }' /proc/"$1"/stat 2>/dev/null || echo gone; }

# wait_state PID STATE WHAT: until PID is in STATE (bounded)
wait_state() {
	timeout 60 bash -c 'until [ "$(awk "{ print \$3 }" /proc/"$1"/stat 2>/dev/null)" = "$2" ]; do sleep 0.01; done' \
		_ "$1" "$2" || fail "$3: process $1 is in state $(proc_state "$1"), not $2"
}

# alive PID WHAT: PID still runs (not dead, not a zombie)
alive() {
	local s
	s=$(proc_state "$1")
	[ "$s" != gone ] && [ "$s" != Z ] || fail "$2: process $1 died"
}

# bt_start NAME SCRIPT: bpftrace SCRIPT (after a BEGIN that prints "ready") into $T/NAME.out;
# returns once it is attached; sets BT
bt_start() {
	bpftrace -e "BEGIN { printf(\"ready\\n\"); } $2" >"$T/$1.out" 2>&1 &
	BT=$!
	timeout 60 bash -c 'until grep -q "^ready$" "$1" 2>/dev/null; do kill -0 $2 2>/dev/null || exit 1; sleep 0.05; done' \
		_ "$T/$1.out" $BT || { sed 's/^/  | /' "$T/$1.out" >&2; fail "bpftrace $1 never attached"; }
}

# bt_map NAME MAP: a count map's value in bpftrace's output (0 when it never counted)
bt_map() { awk -v m="@$2:" '$1 == m { v = $2 } END { print v + 0 }' "$T/$1.out"; }

# serve_more PID READY WHAT: the serving target makes 1000 more rounds (bounded)
serve_more() {
	rm -f "$2.more"
	kill -USR1 "$1" 2>/dev/null || fail "$3: the target died"
	timeout 60 bash -c 'until [ -e "$1" ]; do kill -0 $2 2>/dev/null || exit 1; sleep 0.05; done' _ "$2.more" "$1" \
		|| { alive "$1" "$3"; fail "$3: no 1000 more rounds in 60 s (state $(proc_state "$1"))"; }
}

# watch_states PID FILE: in the background, every state PID is seen in goes to FILE, one line
# per change, until watch_stop; sets WATCH
watch_states() {
	python3 - "$1" "$2" <<'PY' &
import sys, time
pid, out = sys.argv[1], sys.argv[2]
last = None
with open(out, "w") as f:
    while True:
        try:
            s = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            s = "gone"
        if s != last:
            f.write(s + "\n"); f.flush(); last = s
        if s == "gone":
            break
        time.sleep(0.002)
PY
	WATCH=$!
}
watch_stop() { kill -TERM "$WATCH" 2>/dev/null || true; wait "$WATCH" 2>/dev/null || true; }
