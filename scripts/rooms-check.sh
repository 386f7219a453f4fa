#!/bin/sh
# The rooms of libgpupool point one way (docs/design.md, "The rooms"): no
# loop among the calls between them.  Read from the objects the build
# made, not from the sources: nm lists what each object defines and what
# it calls (its undefined symbols), so a call through a header's inline
# function or a macro counts where it lands, and a declaration nobody
# calls does not.
#
# A room is a folder of userlib/ (backend, dev, host, interpose, io), a
# file at its top (ctx, cuda, log, map, torch) or core/.  Every object of
# the library and of the interposer is read (their sources, as
# userlib/lib.mk lists them); each call from one room to a symbol another
# defines is an edge, and tsort(1) finds any loop.  The edges are printed
# with a symbol each, the loops with their rooms.
#
# Usage: scripts/rooms-check.sh [OBJ-DIR]   (default build/userlib/obj)
# Writes build/results/rooms.counts (one test).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
obj=${1:-${O:-$top/build}/userlib/obj}
results=${RESULTS_DIR:-${O:-$top/build}/results}
mkdir -p "$results"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "rooms: $*"
	echo "pass=0 fail=1 skip=0" > "$results/rooms.counts"
	exit 1
}

# The objects, each after its room (two nm runs over all of them).
objs=
for s in $(cd "$top" && ls core/*.c userlib/*.c userlib/*/*.c); do
	o=$obj/${s%.c}.o
	[ -r "$o" ] || fail "$o is missing (build the library first: make lib)"
	case $s in
	core/*) r=core ;;
	userlib/*/*) r=${s#userlib/}; r=${r%%/*} ;;
	*) r=${s#userlib/}; r=${r%.c} ;;
	esac
	echo "$o $r" >> "$tmp/rooms"
	objs="$objs $o"
done
{ nm -A -g --defined-only $objs | awk 'NF == 3 { print "D", $1, $3 }' &&
  nm -A -u $objs | awk '{ print "U", $1, $3 }'; } > "$tmp/nm" || fail "nm failed"
awk 'NR == FNR { room[$1 ":"] = $2; next }
     { f = $2; sub(/:[^:]*$/, ":", f); print $1, $3, room[f] }' \
	"$tmp/rooms" "$tmp/nm" > "$tmp/syms"

# room -> room symbol, for every call that crosses rooms.
awk '$1 == "D" { def[$2] = $3; next }
     { use[++n] = $2 " " $3 }
     END { for (i = 1; i <= n; i++) {
		split(use[i], u, " ")
		if ((u[1] in def) && def[u[1]] != u[2])
			print u[2], def[u[1]], u[1]
	} }' "$tmp/syms" | sort -k1,1 -k2,2 -k3,3 > "$tmp/edges"
[ -s "$tmp/edges" ] || fail "no call between rooms found: the objects are not the library's"

echo "rooms: who calls whom (one symbol of each)"
awk '$1 != a || $2 != b { printf "  %-10s -> %-10s %s\n", $1, $2, $3; a = $1; b = $2 }' \
	"$tmp/edges"
cut -d' ' -f1,2 "$tmp/edges" | sort -u | tsort > /dev/null 2> "$tmp/loops"
if [ -s "$tmp/loops" ]; then
	sed -e 's/^tsort: -: input contains a loop:/  a loop:/' \
	    -e 's/^tsort: /    /' "$tmp/loops"
	fail "a loop between rooms (above): one of them must stop calling the other (a hook it registers, an op, a function moved)"
fi
echo "rooms: no loop among $(cut -d' ' -f1,2 "$tmp/edges" | tr ' ' '\n' | sort -u | wc -l) rooms"
echo "pass=1 fail=0 skip=0" > "$results/rooms.counts"
