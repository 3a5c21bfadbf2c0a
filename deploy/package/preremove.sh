#!/bin/sh
# binlog2ch package, before a removal (dpkg: remove; rpm: 0) or an upgrade
# (dpkg: upgrade; rpm: 1). On removal the units are stopped, as the binary
# is about to go (the stop flushes and saves the checkpoint); an upgrade
# leaves them running.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl stop binlog2ch.service binlog2ch-fullsync.service || true
	fi
	;;
esac
exit 0
