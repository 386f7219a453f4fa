#!/bin/sh
# Functions in kmod/ and core/ stay under 60 lines (docs/development.md,
# "Style"), counted from the first line of the definition (its return type)
# to the closing brace.  Kernel style makes that countable without a
# parser: a function's body opens with "{" alone on a line and closes with
# "}" at column 0; its definition starts at the first column-0 line after
# the last blank line, comment, preprocessor line or ";" before that "{".
#
# A function may stay longer only when it is in the list below, with the
# reason (and the same reason in a comment above it).  A listed function
# that is no longer over the limit fails too, so the list stays true.
#
# Usage: scripts/func-length.sh    Writes build/results/func-length.counts
#                                  (one test).  No build needed: reads the
#                                  sources, in well under a second.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
results=${RESULTS_DIR:-${O:-$top/build}/results}
mkdir -p "$results"
max=60

# FILE FUNCTION: why it stays whole (the same reason stands in a comment
# above the function, where it is not about to be rewritten).
exceptions=$(cat <<'EOF'
core/bfc.c alloc: the hot path: its exits to alloc_slow() are gotos to one label, before any change; helpers would test each exit twice
core/bfc_tree.c tree_delete_fixup: CLRS's four cases and their mirrors, read side by side against the textbook; split, the loop state would pass through helpers
EOF
)

# Every function: FILE:LINE NAME LENGTH.
lengths=$(cd "$top" && awk '
FNR == 1 { start = 0; infn = 0; incomment = 0 }
{
	line = $0
	if (infn) {
		if (line ~ /^}/) {
			print FILENAME ":" start, name, FNR - start + 1
			infn = 0; start = 0
		}
		next
	}
	if (incomment) {
		if (line ~ /\*\//)
			incomment = 0
		next
	}
	if (line ~ /^[ \t]*\/\*/ && line !~ /\*\//) {
		incomment = 1; start = 0; next
	}
	if (line ~ /^[ \t]*(\/\*.*\*\/|\/\/.*)?[ \t]*$/ || line ~ /^#/) {
		start = 0; next
	}
	if (line ~ /^{/) {
		if (start) {
			infn = 1
			sig = ""
			for (i = start; i < FNR; i++)
				sig = sig " " text[i]
			sub(/\(.*/, "", sig)
			n = split(sig, w, /[ \t*]+/)
			name = w[n]
		}
		next
	}
	if (line ~ /^[A-Za-z_]/ && !start)
		start = FNR
	if (start)
		text[FNR] = line
	if (line ~ /;[ \t]*$/ || line ~ /^}/)
		start = 0
}' core/*.c core/*.h kmod/*.c kmod/*.h)

nfn=$(echo "$lengths" | grep -c .)
long=$(echo "$lengths" | awk -v max="$max" '$3 > max')
report=$(echo "$long" | while read -r at name n; do
	[ -n "$at" ] || continue
	why=$(echo "$exceptions" | grep "^${at%%:*} $name: " | sed 's/^[^:]*: //')
	if [ -n "$why" ]; then
		echo "$at $name: $n lines, kept whole: $why"
	else
		echo "$at $name: $n lines, over $max: split it into named steps, or list it in scripts/func-length.sh with the reason"
	fi
done)
[ -z "$report" ] || echo "$report"
bad=$(echo "$report" | grep -c "lines, over $max:")
stale=$(echo "$exceptions" | while read -r f name why; do
	[ -n "$f" ] || continue
	name=${name%:}
	echo "$long" | grep -q "^$f:[0-9]* $name " ||
		echo "$f $name: listed as an exception but not over $max lines (or gone): take it off the list"
done)
[ -z "$stale" ] || echo "$stale"
nstale=$(echo "$stale" | grep -c .)
nexc=$(echo "$exceptions" | grep -c .)
if [ "$bad" -eq 0 ] && [ "$nstale" -eq 0 ]; then
	echo "func-length: $nfn functions in kmod/ and core/, none over $max lines but the $nexc listed exceptions"
	echo "pass=1 fail=0 skip=0" > "$results/func-length.counts"
else
	echo "func-length: $bad function(s) over $max lines, $nstale stale exception(s), of $nfn functions"
	echo "pass=0 fail=1 skip=0" > "$results/func-length.counts"
	exit 1
fi
