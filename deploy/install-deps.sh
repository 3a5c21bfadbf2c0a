#!/bin/sh
# Installs the servers the demo, the tests and the benchmarks run privately:
# MariaDB (the MySQL stand-in) and ClickHouse. On Debian as root it uses
# apt-get; elsewhere it says what to install. Servers named by
# BINLOG2CH_TEST_MYSQL / BINLOG2CH_TEST_CLICKHOUSE need no local binaries.
set -eu

have() {
	command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/local/sbin/$1" ]
}

pkgs=""
if [ -z "${BINLOG2CH_TEST_MYSQL:-}" ] && ! { have mariadbd && have mariadb-install-db; }; then
	pkgs="$pkgs mariadb-server"
fi
if [ -z "${BINLOG2CH_TEST_CLICKHOUSE:-}" ] && ! have clickhouse-server; then
	pkgs="$pkgs clickhouse-server clickhouse-client"
fi

# Optional, installed only where apt-get runs: promtool (Debian package
# prometheus) lets `go test ./deploy` run alerts.yml's unit tests; without
# it those tests skip. ZooKeeper (Debian package zookeeper, with a Java
# runtime) runs the ClickHouse cluster tests; without it they fail and say
# how to install it. Chromium (with a font for its screenshots) opens the
# status page in TestStatusPage; without it the test skips, except under
# CI, where it fails. pt-online-schema-change (Debian package
# percona-toolkit) runs a real online schema migration in
# TestMigrationPTOSC; without it the test skips, except under CI, where it
# fails. rpm lets TestPackageInstall list the .rpm that make dist builds
# (without it only its header is checked); dpkg and systemd-analyze, which
# the .deb's install test needs, come with Debian itself.
optional=""
if ! have promtool; then
	optional="prometheus"
fi
if ! have rpm; then
	optional="$optional rpm"
fi
if ! have chromium; then
	optional="$optional chromium fonts-dejavu-core"
fi
if ! have pt-online-schema-change; then
	optional="$optional percona-toolkit"
fi
if [ ! -f /usr/share/java/zookeeper.jar ]; then
	optional="$optional zookeeper"
fi
can_apt=false
if [ "$(id -u)" -eq 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; then
	can_apt=true
fi

if ! command -v go >/dev/null 2>&1; then
	echo "install-deps: Go is not installed; get Go >= 1.25 from https://go.dev/dl/" >&2
	exit 1
fi

if [ -z "$pkgs" ] && { [ -z "$optional" ] || ! $can_apt; }; then
	echo "install-deps: MariaDB and ClickHouse are present"
	exit 0
fi

if $can_apt; then
	pkgs="$pkgs $optional"
	echo "install-deps: installing$pkgs with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# shellcheck disable=SC2086 # word splitting of the package list is wanted
	apt-get install -y -q --no-install-recommends $pkgs
	exit 0
fi

cat >&2 <<MSG
install-deps: missing:$pkgs
  On Debian or Ubuntu: sudo apt-get install$pkgs
  Elsewhere: install MariaDB >= 10.6 (mariadbd, mariadb-install-db) and
  clickhouse-server, or point the tests at running servers:
    BINLOG2CH_TEST_MYSQL=mysql://user:password@host:port
    BINLOG2CH_TEST_CLICKHOUSE=clickhouse://user:password@host:9000
MSG
exit 1
