#!/bin/sh
# make dist: static binaries and .deb/.rpm packages (nfpm, a Go tool of the
# module, so it builds offline from the module cache like every other
# dependency). Run from anywhere; writes to DIST_DIR (default dist/).
#
#   deploy/dist.sh                      binaries and packages for DIST_ARCHES
#   deploy/dist.sh binary OS ARCH OUT   one static binary (the Dockerfile's)
#
# VERSION is what `binlog2ch version` prints (the Makefile passes git
# describe); the packages' version is derived from it (pkg_version below).
set -eu
cd "$(dirname "$0")/.."

GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
DIST_DIR=${DIST_DIR:-dist}
DIST_ARCHES=${DIST_ARCHES:-amd64 arm64}
PKG_MAINTAINER=${PKG_MAINTAINER:-binlog2ch <https://github.com/binlog2ch/binlog2ch/issues>}

# binary OS ARCH OUT: cgo off, so the binary needs no libc and runs on any
# distribution (and in a distroless image); -trimpath keeps build paths out.
binary() {
	CGO_ENABLED=0 GOOS="$1" GOARCH="$2" "$GO" build -trimpath \
		-ldflags "-s -w -X main.version=$VERSION" -o "$3" ./cmd/binlog2ch
}

# pkg_version: dpkg and rpm need a version that starts with a digit and
# sorts after the one before. v1.2.3 -> 1.2.3; v1.2.3-4-gabc (4 commits
# after the tag) -> 1.2.3+4.gabc, above 1.2.3 in both; v1.2.3-rc1 ->
# 1.2.3~rc1, below 1.2.3; an untagged hash abc (-dirty) -> 0.0.0+git.abc(.dirty).
pkg_version() {
	case "$1" in
	v[0-9]* | [0-9]*)
		printf '%s\n' "$1" | sed -E 's/^v//; s/-([0-9]+)-g([0-9a-f]+)/+\1.g\2/; s/-dirty$/.dirty/; s/-/~/g'
		;;
	*)
		printf '0.0.0+git.%s\n' "$(printf '%s' "$1" | sed -E 's/[^A-Za-z0-9.]+/./g')"
		;;
	esac
}

if [ "${1:-}" = binary ]; then
	[ $# -eq 4 ] || { echo "usage: $0 binary OS ARCH OUT" >&2; exit 2; }
	binary "$2" "$3" "$4"
	exit 0
fi
if [ "${1:-}" = pkg-version ]; then
	pkg_version "$VERSION"
	exit 0
fi
[ $# -eq 0 ] || { echo "usage: $0 [binary OS ARCH OUT | pkg-version]" >&2; exit 2; }

mkdir -p "$DIST_DIR/units"
# The packaged units run /usr/bin/binlog2ch, where the package puts it; the
# units in deploy/systemd name /usr/local/bin, where a hand install goes.
for u in deploy/systemd/*.service; do
	sed 's#/usr/local/bin/binlog2ch#/usr/bin/binlog2ch#g' "$u" >"$DIST_DIR/units/$(basename "$u")"
done

PKG_VERSION=$(pkg_version "$VERSION")
export PKG_VERSION PKG_MAINTAINER DIST_DIR
for arch in $DIST_ARCHES; do
	binary linux "$arch" "$DIST_DIR/binlog2ch_linux_$arch"
	echo "dist: $DIST_DIR/binlog2ch_linux_$arch ($VERSION)"
	for fmt in deb rpm; do
		ARCH=$arch "$GO" tool nfpm package -f deploy/nfpm.yaml -p "$fmt" -t "$DIST_DIR/"
	done
done
