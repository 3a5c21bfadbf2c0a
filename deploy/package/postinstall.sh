#!/bin/sh
# binlog2ch package, after an install or an upgrade (dpkg: configure [OLD];
# rpm: 1 on install, 2 on upgrade). Creates the service user and reloads
# systemd. It never starts, enables or restarts binlog2ch.service: the
# example config names no server of yours, and a first start copies every
# selected table into ClickHouse, which the operator starts when ready
# (docs/operations.md "Install a package").
set -e

# The user and group of the sysusers file (useradd where there is no
# systemd-sysusers, as in some containers).
if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers /usr/lib/sysusers.d/binlog2ch.conf
elif ! getent passwd binlog2ch >/dev/null 2>&1; then
	useradd --system --user-group --no-create-home --home-dir /var/lib/binlog2ch \
		--shell /usr/sbin/nologin --comment "binlog2ch replication daemon" binlog2ch
fi

# systemd leaves ConfigurationDirectory owned by root and makes it 0750:
# the service user reads its config through the group.
for p in /etc/binlog2ch /etc/binlog2ch/binlog2ch.yaml; do
	if [ -e "$p" ]; then
		chgrp binlog2ch "$p"
	fi
done

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	# An upgrade leaves a running daemon on the old binary until the
	# operator restarts it (after checking the config: docs/operations.md
	# "Upgrade").
	if systemctl is-active --quiet binlog2ch.service; then
		echo "binlog2ch: the running daemon still runs the old binary; restart it with: systemctl restart binlog2ch"
	fi
fi
exit 0
