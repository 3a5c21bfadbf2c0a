// Package deploy holds no code and must not: it is where the deployment files live
// (systemd units, Prometheus alerts, the Grafana dashboard, docker-compose)
// and its tests check them, so a typo in a unit or an alert that names a
// metric binlog2ch does not export fails `make test` instead of a pager.
package deploy
