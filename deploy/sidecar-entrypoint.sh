#!/bin/sh
# Sidecar entrypoint: wait for the neighbouring container's process (shareProcessNamespace),
# then trace it until the pod stops (SIGTERM ends the session cleanly and finalizes files).
#   TARGET_COMM   process name to trace (required), e.g. "nginx"
#   ATF_FUNCTIONS space-separated -f globs (default: every function of its executable)
#   ATF_OUT       output directory (default /traces)
set -eu
: "${TARGET_COMM:?set TARGET_COMM to the process name of the container to trace}"
out=${ATF_OUT:-/traces}
pid=
while [ -z "$pid" ]; do
	pid=$(pgrep -o -x "$TARGET_COMM" || true)
	[ -n "$pid" ] || sleep 1
done
# An emptyDir is 0777: sticky, like /tmp, so atftrace creates its session there (it refuses a
# directory others may write to without the sticky bit) and no other container can touch it.
[ -d "$out" ] && [ -n "$(find "$out" -maxdepth 0 -perm -0002 ! -perm -1000)" ] && chmod +t "$out"
set --
for f in ${ATF_FUNCTIONS:-}; do set -- "$@" -f "$f"; done
exec /usr/local/bin/atftrace record -p "$pid" --follow-fork -o "$out/session_$(date -u +%Y%m%d_%H%M%S)" "$@"
