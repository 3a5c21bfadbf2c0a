#!/bin/sh
# binlog2ch package, after a removal, purge or upgrade. Only reloads
# systemd. The state in /var/lib/binlog2ch (the checkpoint: without it the
# next install copies every table again) and the binlog2ch user are left
# in place, on purge too. The config follows the package manager's rules:
# dpkg -r keeps /etc/binlog2ch/binlog2ch.yaml, dpkg --purge deletes it;
# rpm -e keeps an edited one as binlog2ch.yaml.rpmsave.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
