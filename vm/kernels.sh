#!/bin/sh
# Print the installed Debian kernel releases the VM suites test, one a line:
#   - Debian 12's own kernel (6.1): the release linux-image-amd64 depends
#     on, else the newest /lib/modules/6.1.*-amd64;
#   - the bookworm-backports kernel (6.12): the newest
#     /lib/modules/6.12.*+deb12-amd64.
# A release is printed only when /boot/vmlinuz-<rel>, /lib/modules/<rel> and
# /usr/src/linux-headers-<rel> are all there; a kernel that is missing is
# named on stderr.  Exit status 1 when none is found.
set -eu

usable() {
	[ -f "/boot/vmlinuz-$1" ] && [ -d "/lib/modules/$1" ] &&
		[ -d "/usr/src/linux-headers-$1" ]
}

newest() {	# newest usable release matching a /lib/modules glob
	for d in /lib/modules/$1; do
		[ -d "$d" ] || continue
		r=${d##*/}
		usable "$r" && echo "$r"
	done | sort -V | tail -n 1
}

found=0

k61=
dep=$(dpkg-query -W -f '${Depends}' linux-image-amd64 2>/dev/null || true)
case $dep in
linux-image-6.1.*)
	r=${dep#linux-image-}; r=${r%% *}; r=${r%%,*}
	usable "$r" && k61=$r ;;
esac
[ -n "$k61" ] || k61=$(newest '6.1.*-amd64')
if [ -n "$k61" ]; then
	echo "$k61"; found=1
else
	echo "kernels: no usable 6.1 kernel (apt-get install linux-image-amd64 linux-headers-amd64)" >&2
fi

k612=$(newest '6.12.*+deb12-amd64')
if [ -n "$k612" ]; then
	echo "$k612"; found=1
else
	echo "kernels: no usable 6.12 kernel (bookworm-backports linux-image-6.12.*+deb12-amd64 and its headers)" >&2
fi

[ $found = 1 ]
