#!/usr/bin/env bash
# atftrace record/attach argument rules: each bad invocation is one clear error line and exit 1,
# before anything is loaded or launched (no BPF needed).
source "$(dirname "$0")/lib.sh"

bad() {   # expected-stderr-regex args...
	local want=$1; shift
	local rc=0
	"$ATF" "$@" >"$T/out" 2>"$T/err" || rc=$?
	assert_eq 1 "$rc" "exit status of: $*"
	assert_contains "$T/err" "$want" "error of: $*"
}

cd "$T"
bad "^atftrace record: give a command to launch" record
bad "either -p PID or a command" record -p 1 -- /bin/true
bad "--ring-size: '3M' is not a power of two" record --ring-size 3M -- /bin/true
bad "--ring-size: '2K' is not a power of two" record --ring-size 2K -- /bin/true
bad "--duration: '-1' is not a positive duration" record --duration -1 -- /bin/true
bad "--duration: '1000000000000000000s' is not a positive duration: too large" record --duration 1000000000000000000s -- /bin/true
bad "--detail-for: '2parsecs' is not a positive duration" record --detail-on main --detail-for 2parsecs -- /bin/true
bad "--mode: '0644x' is not an octal file mode" record --mode 0644x -- /bin/true
bad "--mode: '0400' is not an octal file mode from 0600 to 0777" record --mode 0400 -- /bin/true
bad "--mode: '01777' is not an octal file mode" record --mode 01777 -- /bin/true
bad "--pid: 'abc' is not a process id" record -p abc
bad "attach traces a running process" attach -- /bin/true x
bad "^atftrace attach: '/bin/true' is not a process id$" attach /bin/true
bad "^atftrace record: /nonexistent/prog: command not found$" record -- /nonexistent/prog
# a pid that cannot exist (above pid_max's ceiling of 2^22 but within our parser's range)
bad "^atftrace record: -p 1073741000: no such process$" record -p 1073741000
bad "^atftrace record: -p 1073741000: no such process$" attach 1073741000
[ ! -e ada_traces ] || fail "a failed record created ada_traces/"
echo "ok"
