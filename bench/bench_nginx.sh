#!/usr/bin/env bash
# An nginx worker traced with record -p WORKER, figures only; nothing here asserts a time.
# A private nginx (Debian's /usr/sbin/nginx, its own prefix and config in a scratch directory,
# worker_processes 1, 127.0.0.1 on a free port, access_log off) serves a 1 KiB file, and a 404
# for one request in four (wrk -s: 1 thread, $CONNS connections, $SECONDS_RUN s). Which of its
# functions: Debian's nginx is stripped, but it exports its own functions (.dynsym, for its
# dynamic modules), so a short session tracing every one of them (record -p -f 'NGINX:*' during
# a 1 s wrk run) counts the calls and the $NFUN most called are the functions of every session
# below (ties by name); how many of them start with an instruction the kernel single-steps is
# shown (their share of the calls sets what plain probes cost). Requests/s of the worker
# untraced, and traced by atftrace record -p with those functions in each mode: entry
# trampolines (--trampolines), call sites (the default), --no-trampolines (plain probes); and by bpftrace with
# a uprobe and a uretprobe on each (counts only). Best of $REPEAT runs per mode, the untraced
# runs interleaved with the traced ones (rounds of every mode). After each session has ended,
# the worker must still answer 200 with the file's bytes and 404 for a missing file: checked
# and shown per mode.
#   bench/bench_nginx.sh      NGINX_BENCH_SECONDS=5 NGINX_BENCH_REPEAT=3 NGINX_BENCH_FUNCTIONS=50
#   NGINX_BENCH_BPFTRACE=0 leaves bpftrace out
set -u
cd "$(dirname "$0")/.."
source bench/lib.sh
NGINX=/usr/sbin/nginx
WRK=$(command -v wrk || echo /usr/bin/wrk)
SECONDS_RUN=${NGINX_BENCH_SECONDS:-5}
REPEAT=${NGINX_BENCH_REPEAT:-3}
NFUN=${NGINX_BENCH_FUNCTIONS:-50}
CONNS=4
bench_probe_setup bench_nginx "$NGINX" "$WRK"
NGINX=$(readlink -f "$NGINX")
master="" rec="" bt=""
# stop every recorder first (each puts back what it wrote in the worker), then nginx
cleanup() {
	local p
	for p in $rec $bt; do kill -INT "$p" 2>/dev/null; done
	for p in $rec $bt; do wait "$p" 2>/dev/null; done
	[ -z "$master" ] || { kill -TERM "$master" 2>/dev/null; wait "$master" 2>/dev/null; }
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
chmod 755 "$tmp"

# ---- the private nginx ----------------------------------------------------------------------
mkdir -p "$tmp/ngx/html" "$tmp/ngx/logs" "$tmp/ngx/tmp"
head -c 768 /dev/urandom | base64 -w 64 | head -c 1024 >"$tmp/ngx/html/1k.html"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
d=$tmp/ngx
cat >"$d/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log;
events { worker_connections 256; }
http {
	access_log off;
	log_not_found off;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	default_type text/html;
	server {
		listen 127.0.0.1:$port;
		root $d/html;
	}
}
EOF
cat >"$d/mix.lua" <<'EOF'
local n = 0
request = function()
	n = n + 1
	if n % 4 == 0 then return wrk.format(nil, "/missing") end
	return wrk.format(nil, "/1k.html")
end
EOF
url=http://127.0.0.1:$port
"$NGINX" -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >"$d/logs/stderr" 2>&1 &
master=$!

# responses: "ok" when the worker answers 200 with the file's bytes and 404 for a missing file,
# else what it answered
responses() {
	python3 - "$url" "$d/html/1k.html" <<'EOF'
import http.client, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
want = open(sys.argv[2], "rb").read()
got = []
try:
    for path, status, body in (("/1k.html", 200, want), ("/missing", 404, None)):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        b = r.read()
        c.close()
        if r.status != status or (body is not None and b != body):
            got.append("%s: %d, %d bytes" % (path, r.status, len(b)))
except OSError as e:
    got.append(str(e))
print("; ".join(got) or "ok")
EOF
}
for _ in $(seq 100); do
	[ "$(responses)" = ok ] && break
	kill -0 "$master" 2>/dev/null || break
	sleep 0.1
done
[ "$(responses)" = ok ] || { echo "bench_nginx: nginx did not serve: $(head -3 "$d/logs/stderr" "$d/logs/error.log")"; exit 1; }
worker=$(pgrep -P "$master" | head -1)
[ -n "$worker" ] || { echo "bench_nginx: no worker process"; exit 1; }

# load SECONDS: requests/s of one wrk run (empty when it failed); its report in $tmp/wrk.out
load() {
	"$WRK" -t1 -c"$CONNS" -d"$1"s -s "$d/mix.lua" "$url/" >"$tmp/wrk.out" 2>&1
	awk '/^Requests\/sec:/ { print $2 }' "$tmp/wrk.out"
}

# record_start LOG OPTION...: an atftrace record -p session of the worker, attached on return
# (false when the recorder ended before)
record_start() {
	local log=$1
	shift
	rm -rf "$tmp/rec" "$tmp/ready"
	"$ATF" record -p "$worker" -o "$tmp/rec" --ready-file "$tmp/ready" "$@" 2>"$log" &
	rec=$!
	until [ -e "$tmp/ready" ]; do
		kill -0 "$rec" 2>/dev/null || { wait "$rec"; rec=""; return 1; }
		sleep 0.05
	done
}
record_stop() { kill -INT "$rec" 2>/dev/null; wait "$rec"; local rc=$?; rec=""; return $rc; }

# ---- the functions: the most called of a short session tracing every one of nginx ------------
if ! { record_start "$tmp/profile.log" -f "$NGINX:*" && load 1 >/dev/null && record_stop; }; then
	echo "bench_nginx: the profile session failed: $(grep -v hint "$tmp/profile.log" | tail -2)"
	exit 1
fi
exported=$(sed -n 's/.*attached to [0-9]*: \([0-9]*\) functions.*/\1/p' "$tmp/profile.log")
"$ATF" report "$tmp/rec" | awk 'NR > 2 && $5 ~ /^[0-9]+$/ { print $5, $13 }' | sort -k1,1nr -k2,2 |
	head -n "$NFUN" >"$tmp/profile"
awk '{ print $2 }' "$tmp/profile" >"$tmp/functions"
nf=$(wc -l <"$tmp/functions")
[ "$nf" -gt 0 ] || { echo "bench_nginx: the profile session counted no calls"; exit 1; }
# calls of those functions per request of the profile's run
per_request=$(awk -v r="$(awk '/ requests in / { print $1 }' "$tmp/wrk.out")" '{ c += $1 }
	END { if (r > 0) printf "%.0f", c / r; else printf "n/a" }' "$tmp/profile")
fargs=()
while read -r f; do fargs+=(-f "$NGINX:$f"); done <"$tmp/functions"
# those whose first instruction the kernel single-steps (a plain probe's dearest case), and
# their share of the profile's calls
"$ATF" list-functions -s "${fargs[@]}" "$NGINX" 2>/dev/null | awk '$5 == "single-step" { print $NF }' >"$tmp/stepped"
stepped=$(awk 'NR == FNR { s[$1] = 1; next } { t += $1 } ($2 in s) { n++; c += $1 }
	END { printf "%d (%.0f%% of the calls)", n, t ? 100 * c / t : 0 }' "$tmp/stepped" "$tmp/profile")

# ---- the modes ------------------------------------------------------------------------------
# run MODE: sets fig to the requests/s of one run while MODE traces the worker (untraced: none;
# empty when it failed); the recorder's functions in $tmp/MODE.nfun, its redirected sites lines
# in $tmp/MODE.sites, its lost events appended to $tmp/MODE.lost, and the worker's responses
# once the session ended appended to $tmp/MODE.check.
# (Not in a subshell: the recorder's pid stays known to cleanup.)
run() {
	local mode=$1 args=()
	fig=""
	case $mode in
	untraced) fig=$(load "$SECONDS_RUN"); return ;;
	bpftrace) run_bpftrace; return ;;
	default) ;;
	*) args=("$mode") ;;
	esac
	record_start "$tmp/$mode.log" -v "${args[@]}" "${fargs[@]}" && fig=$(load "$SECONDS_RUN") && record_stop || fig=""
	sed -n 's/.*attached to [0-9]*: \([0-9]*\) functions.*/\1/p' "$tmp/$mode.log" >"$tmp/$mode.nfun"
	grep -E 'redirected|tail stubs' "$tmp/$mode.log" | sed 's/^atftrace record: /  /' >"$tmp/$mode.sites"
	sed -n 's/.* \([0-9]*\) lost,.*/\1/p' "$tmp/$mode.log" >>"$tmp/$mode.lost"
	responses >>"$tmp/$mode.check"
}
# run_bpftrace: the same for bpftrace -p WORKER counting the calls and returns of the functions
run_bpftrace() {
	local probes="" rets="" f i=0
	while read -r f; do
		probes+="${probes:+,}uprobe:$NGINX:$f"
		rets+="${rets:+,}uretprobe:$NGINX:$f"
	done <"$tmp/functions"
	bpftrace -p "$worker" -e "$probes { @c = count(); } $rets { @r = count(); }" >"$tmp/bt.log" 2>&1 &
	bt=$!
	# attached once the kernel lists its perf events (bpftrace's own output is buffered); no
	# figure when it ends or has not attached within 2 minutes
	while [ "$(bpftool perf list 2>/dev/null | grep -c "^pid $bt ")" -lt $((2 * nf)) ]; do
		kill -0 "$bt" 2>/dev/null && [ $((i += 1)) -le 600 ] || break
		sleep 0.2
	done
	[ "$i" -le 600 ] && kill -0 "$bt" 2>/dev/null && fig=$(load "$SECONDS_RUN")
	kill -INT "$bt" 2>/dev/null
	wait "$bt"
	bt=""
	echo "$nf" >"$tmp/bpftrace.nfun"
	responses >>"$tmp/bpftrace.check"
}
modes=(untraced --trampolines --call-sites --no-trampolines)
if [ "${NGINX_BENCH_BPFTRACE:-1}" = 1 ] && command -v bpftrace >/dev/null; then
	[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	modes+=(bpftrace)
fi
declare -A best
for _ in $(seq "$REPEAT"); do
	for m in "${modes[@]}"; do
		run "$m"
		[ -n "$fig" ] || continue
		awk -v a="$fig" -v b="${best[$m]:-0}" 'BEGIN { exit !(a > b) }' && best[$m]=$fig
	done
done

echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), 1 worker, record -p WORKER; wrk 1 thread, $CONNS connections," \
	"$SECONDS_RUN s, 1 KiB file + 1 in 4 a 404; best of $REPEAT; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "functions: the $nf most called of the $exported nginx exports (.dynsym; no debug file) in a 1 s profile session," \
	"$per_request calls of them per request: $(head -5 "$tmp/functions" | paste -sd' ') ..."
echo "single-stepped first instruction (plain probes; trampolines or call sites enter them otherwise): $stepped"
printf '%-22s %11s %7s %9s %6s  %s\n' mode requests/s share functions lost "responses after each session"
for m in "${modes[@]}"; do
	label=$m
	case $m in --trampolines) label="entry trampolines" ;; --call-sites) label="call sites (default)" ;; bpftrace) label="bpftrace (u+uretprobe)" ;; esac
	if [ "$m" = untraced ]; then
		printf '%-22s %11s\n' "$label" "${best[$m]:-n/a}"
		continue
	fi
	checks=$(sort "$tmp/$m.check" 2>/dev/null | uniq -c | awk '{ n = $1; $1 = ""; printf "%s%s x%d", sep, substr($0, 2), n; sep = "; " }')
	lost=$(awk '{ s += $1; n++ } END { print n ? s : "-" }' "$tmp/$m.lost" 2>/dev/null || echo -)
	printf '%-22s %11s %7s %9s %6s  %s\n' "$label" "${best[$m]:-n/a}" "$(bench_ratio "${best[$m]:-}" "${best[untraced]:-}")" \
		"$(cat "$tmp/$m.nfun" 2>/dev/null)" "$lost" "${checks:-n/a}"
done
if [ -s "$tmp/--call-sites.sites" ]; then
	echo "--call-sites (record -v, last session):"
	cat "$tmp/--call-sites.sites"
fi
exit 0
