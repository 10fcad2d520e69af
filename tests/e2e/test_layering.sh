#!/usr/bin/env bash
# The layers of docs/architecture.md, checked on the built objects: every symbol an object of one
# layer takes from another layer must come from a layer below it (cmd > record, patch > probe >
# sym > proc, formats > atf), so no layer calls up and no two layers call each other. Inside a layer
# the files' calls go one way too: no circle of files that call each other (a > b > a, or longer),
# which tsort finds. Reads the objects with nm; needs no root.
set -euo pipefail
cd "${ATFTRACE_ROOT:-$(dirname "$0")/../..}"
obj=${OUTPUT:-.output}/obj
rank() {   # layer folder -> rank; layers of equal rank must not call each other either
	case $1 in
	user/atf) echo 0 ;; user/proc|formats) echo 1 ;; user/sym) echo 2 ;; user/probe) echo 3 ;;
	user/record|user/patch) echo 4 ;; user/cmd) echo 5 ;;
	*) echo "unknown layer $1" >&2; exit 1 ;;
	esac
}
defs=$(mktemp) uses=$(mktemp) inner=$(mktemp)
trap 'rm -f "$defs" "$uses" "$inner"' EXIT
objs=$(cd "$obj" && find user formats -name '*.o' | sort)
[ -n "$objs" ] || { echo "no objects under $obj: build first"; exit 1; }
for o in $objs; do
	layer=$(dirname "$o")
	nm --defined-only -g "$obj/$o" | awk -v l="$layer" -v f="$o" 'NF == 3 { print $3, l, f }' >>"$defs"
	nm --undefined-only -g "$obj/$o" | awk -v l="$layer" -v f="$o" '{ print $NF, l, f }' >>"$uses"
done
bad=0
while read -r sym ulayer ufile; do
	d=$(awk -v s="$sym" '$1 == s { print $2, $3; exit }' "$defs")
	[ -n "$d" ] || continue                 # a library's symbol (libc, libbpf, ...)
	read -r dlayer dfile <<<"$d"
	if [ "$dlayer" = "$ulayer" ]; then
		[ "$dfile" = "$ufile" ] || echo "$dfile $ufile" >>"$inner"    # caller after callee
		continue
	fi
	if [ "$(rank "$dlayer")" -ge "$(rank "$ulayer")" ]; then
		echo "layering: $ufile ($ulayer) calls $sym from $dfile ($dlayer), which is not below it"
		bad=1
	fi
done <"$uses"
if ! loops=$(sort -u "$inner" | tsort 2>&1 >/dev/null); then
	echo "layering: files of one layer call each other in a circle (tsort):"
	echo "$loops" | sed 's/^/  /'
	bad=1
fi
[ $bad -eq 0 ] && echo "layers: $(echo "$objs" | wc -l) objects, every cross-layer call goes down," \
	"no files of one layer call each other in a circle"
exit $bad
