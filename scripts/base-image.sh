#!/usr/bin/env bash
# Make the base images that deploy/Containerfile builds FROM when podman has none of them and no
# registry serves them: Debian 12 from a debootstrap rootfs, imported and tagged with the very
# names the Containerfile's FROM lines use, so the same Containerfile builds with or without a
# registry.
#   scripts/base-image.sh [CONTAINERFILE]      (default deploy/Containerfile)
# Names it can make:  debian:12        the minbase rootfs (apt, dpkg, bash, coreutils)
#                     debian:12-slim   the same without documentation, manuals and locales, and
#                                      with dpkg told to leave them out of later installs too
# The debootstrap rootfs is cached as a tarball, keyed on suite, variant and architecture:
#   $ATFTRACE_CACHE/debian-bookworm-minbase-amd64.tar   (ATFTRACE_CACHE default /var/cache/atftrace)
# Environment: ATFTRACE_BASE=pull (never debootstrap) or =debootstrap (never try a registry);
# ATFTRACE_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
containerfile=${1:-$here/deploy/Containerfile}
cache=${ATFTRACE_CACHE:-/var/cache/atftrace}
mirror=${ATFTRACE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mode=${ATFTRACE_BASE:-auto}
suite=bookworm
variant=minbase
arch=$(dpkg --print-architecture)
rootfs_tar=$cache/debian-$suite-$variant-$arch.tar
tries=3

die() { echo "base-image: $*" >&2; exit 1; }

# FROM names that are images, not earlier stages ("FROM build"), in order, once each
from_names() {
	awk 'toupper($1) == "FROM" {
		name = $2
		for (i = 2; i <= NF; i++) if ($i !~ /^--/) { name = $i; break }
		if (!(name in stage) && !(name in seen)) { seen[name] = 1; print name }
		if (toupper($(NF - 1)) == "AS") stage[$NF] = 1
	}' "$1"
}

# debootstrap into a fresh directory, retried: the archive or the network may fail for a while
debootstrap_rootfs() {
	local dir=$1 try log=$cache/debootstrap.log
	command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/deps.sh installs it)"
	for try in $(seq 1 $tries); do
		rm -rf "$dir"
		echo "base-image: debootstrap --variant=$variant $suite from $mirror (try $try of $tries; the first run takes minutes)" >&2
		if debootstrap --variant="$variant" --arch="$arch" "$suite" "$dir" "$mirror" >"$log" 2>&1; then
			return 0
		fi
		tail -n 5 "$log" | sed 's/^/  | /' >&2
		[ "$try" -lt $tries ] && sleep $((try * 10))
	done
	die "debootstrap of Debian $suite from $mirror failed $tries times (log: $log); is the archive reachable? Set ATFTRACE_DEBIAN_MIRROR to another mirror"
}

# The cached rootfs tarball: debootstrap output with the package caches emptied and the apt
# sources of a Debian 12 image (the release, its updates and security).
make_rootfs_tar() {
	local dir
	[ -s "$rootfs_tar" ] && return 0
	dir=$(mktemp -d "$cache/rootfs.XXXXXX")
	debootstrap_rootfs "$dir/root"
	rm -rf "$dir/root/var/cache/apt/archives/"*.deb "$dir/root/var/cache/apt/"*.bin \
		"$dir/root/var/lib/apt/lists/"* "$dir/root/etc/hostname" "$dir/root/etc/resolv.conf"
	rm -f "$dir/root/etc/apt/sources.list"
	cat >"$dir/root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	# like Debian's published images: apt keeps no downloaded packages in an image layer
	echo 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };' \
		>"$dir/root/etc/apt/apt.conf.d/docker-clean"
	tar -C "$dir/root" --numeric-owner -cf "$dir/rootfs.tar" .
	mv "$dir/rootfs.tar" "$rootfs_tar"
	rm -rf "$dir"
}

# import_image NAME SLIM: import the cached rootfs (SLIM=1: without docs, manuals, locales) as NAME
import_image() {
	local name=$1 slim=$2 dir
	dir=$(mktemp -d "$cache/import.XXXXXX")
	tar -C "$dir" --numeric-owner -xf "$rootfs_tar"
	if [ "$slim" = 1 ]; then
		find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
		find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
		rm -rf "$dir/usr/share/man/"* "$dir/usr/share/info/"* "$dir/usr/share/locale/"* \
			"$dir/usr/share/lintian" "$dir/usr/share/linda"
		cat >"$dir/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
	fi
	tar -C "$dir" --numeric-owner -c . |
		podman import -q --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'CMD ["bash"]' - "$name" >/dev/null
	rm -rf "$dir"
}

[ -f "$containerfile" ] || die "$containerfile: no such file"
command -v podman >/dev/null || die "podman is not installed (scripts/deps.sh installs it)"
for name in $(from_names "$containerfile"); do
	podman image exists "$name" && continue
	if [ "$mode" != debootstrap ] && timeout 300 podman pull -q "$name" >/dev/null 2>&1; then
		continue
	fi
	[ "$mode" = pull ] && die "cannot pull $name and ATFTRACE_BASE=pull"
	case $name in
	debian:12) slim=0 ;;
	debian:12-slim) slim=1 ;;
	*) die "$name: no registry serves it and this script makes only debian:12 and debian:12-slim" ;;
	esac
	# the short name as the Containerfile writes it resolves to docker.io/library/debian
	full=docker.io/library/$name
	mkdir -p "$cache"
	(
		flock 9
		# under the lock, a temporary directory left here is this run's own, on failure too
		trap 'rm -rf "$cache"/rootfs.* "$cache"/import.*' EXIT
		make_rootfs_tar
		podman image exists "$full" || import_image "$full" "$slim"
	) 9>"$cache/.lock"
	podman image exists "$name" || die "$full was imported but podman does not find it as $name"
	echo "base-image: $name made from a debootstrap rootfs ($rootfs_tar)" >&2
done
