# shellcheck shell=sh
# Sourced by the check scripts that count their own tests
# (install-check.sh, bench-smoke.sh): TAP-style lines and the counts file
# that scripts/summarize.sh adds up.  The caller sets pass=0 fail=0 n=0.

# ok STATUS DESCRIPTION: one test, passed when STATUS is 0.
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		pass=$((pass + 1))
		echo "ok $n $2"
	else
		fail=$((fail + 1))
		echo "not ok $n $2"
	fi
}
