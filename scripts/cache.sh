# shellcheck shell=sh
# Sourced (sh): the machine-wide cache that every clone shares, for what
# `make check` builds or fetches once per machine (the test kernels, the
# arm64 guest's Debian root).  A cache NAME is a directory
# $GPUPOOL_CACHE/NAME (default /var/cache/gpupool/NAME, ~/.cache/gpupool/NAME
# when that is not writable) holding one build per key, BASE/<key>/, and:
#   BASE/.lock        one run at a time looks at or changes the cache
#   BASE/<key>.inuse  a shared lock held while a run uses <key> (--hold)
# The caller defines log() before sourcing this.

# The directory of cache $1 (or $2, when given and not empty).
cache_base() {
	if [ -n "${2:-}" ]; then
		# Absolute: a kernel's make runs in src/ and reads O= from there.
		realpath -m "$2"
	elif [ -n "${GPUPOOL_CACHE:-}" ]; then
		realpath -m "$GPUPOOL_CACHE/$1"
	else
		cb=/var/cache/gpupool/$1
		if ! mkdir -p "$cb" 2>/dev/null || [ ! -w "$cb" ]; then
			cb=${XDG_CACHE_HOME:-$HOME/.cache}/gpupool/$1
			log "/var/cache/gpupool is not writable here: using $cb"
		fi
		echo "$cb"
	fi
}

# Take BASE/.lock on fd 9 (kept until the script exits), saying so when
# another run holds it.
cache_lock() {
	mkdir -p "$1"
	exec 9>> "$1/.lock"
	if ! flock -n 9; then
		log "waiting for $1/.lock (another run is building or checking)"
		flock 9
	fi
}

# Keep BASE/KEY from being removed by another run's cache_prune while
# process PID lives (nothing when PID is empty): a shared lock on
# BASE/KEY.inuse, taken while the cache is locked and kept, after the
# caller exits, by a child that waits for PID.
cache_hold() {
	[ -n "$3" ] || return 0
	exec 8>> "$1/$2.inuse"
	flock -s 8
	(while kill -0 "$3" 2>/dev/null; do sleep 10; done) \
		> /dev/null 2>&1 < /dev/null 9>&- &
	exec 8>&-
}

# Remove every build in BASE but KEEP (a directory), except those that a
# run holds (cache_hold).
cache_prune() {
	for old in "$1"/*/; do
		old=${old%/}
		if [ ! -d "$old" ] || [ "$old" = "$2" ]; then continue; fi
		if flock -n -x "$old.inuse" rm -rf "$old" "$old.inuse"; then
			log "removed the older build $old"
		else
			log "kept the older build $old: a run is using it"
		fi
	done
}
