package config

import (
	"fmt"
	"strings"
	"time"
)

// Where the checkpoint lives (state.store) and who may replicate
// (state.lease).
const (
	StoreFile       = "file"
	StoreClickHouse = "clickhouse"
	LeaseNone       = "none"
	LeaseZooKeeper  = "zookeeper"

	defaultStateTable = "binlog2ch.checkpoints"
)

// StateConfig says where the checkpoint is kept. "file" (the default) is
// state_dir on this host. "clickhouse" is a replicated table every host
// reaches, so a daemon on another host with the same config resumes where
// the last one stopped; it needs a ZooKeeper lease so that two daemons
// never replicate the same source at once.
type StateConfig struct {
	Store string `yaml:"store"`
	// Name identifies this replication (one source into one target) in the
	// shared table and the lease path.
	Name string `yaml:"name"`
	// Table is db.table of the checkpoint table (store clickhouse).
	Table string `yaml:"table"`
	// InsertQuorum is insert_quorum for checkpoint writes; 0 leaves
	// ClickHouse's default (acknowledged by the server written to).
	InsertQuorum int `yaml:"insert_quorum"`
	// Lease is "none" or "zookeeper".
	Lease     string   `yaml:"lease"`
	ZooKeeper []string `yaml:"zookeeper"`
	// LeasePath is the ephemeral node; default /binlog2ch/leases/<name>.
	LeasePath string `yaml:"lease_path"`
	// SessionTimeout is the ZooKeeper session timeout: how long a dead
	// holder keeps the lease, and the bound on noticing a partition.
	SessionTimeout time.Duration `yaml:"session_timeout"`
}

func (c *Config) validateState(d *decoder) {
	s := &c.State
	switch s.Store {
	case StoreFile, StoreClickHouse:
	default:
		d.problem("state.store", fmt.Sprintf("want %s or %s, got %q", StoreFile, StoreClickHouse, s.Store))
	}
	switch s.Lease {
	case LeaseNone, LeaseZooKeeper:
	default:
		d.problem("state.lease", fmt.Sprintf("want %s or %s, got %q", LeaseNone, LeaseZooKeeper, s.Lease))
	}
	if s.Store == StoreClickHouse || s.Lease == LeaseZooKeeper {
		if s.Name == "" {
			d.problem("state.name", "required with a shared store or a lease: a name for this replication, the same on every host")
		} else if strings.ContainsAny(s.Name, "/'\\") || strings.TrimSpace(s.Name) != s.Name {
			d.problem("state.name", "must not contain / ' \\ or surrounding spaces")
		}
	}
	if s.Store == StoreClickHouse {
		if s.Lease != LeaseZooKeeper {
			// A shared checkpoint without a lease lets two hosts replicate
			// at once and overwrite each other's position.
			d.problem("state.lease", "store clickhouse needs lease zookeeper")
		}
		db, table, ok := strings.Cut(s.Table, ".")
		if !ok || checkDatabaseName(db) != nil || checkDatabaseName(table) != nil {
			d.problem("state.table", fmt.Sprintf("want db.table, got %q", s.Table))
		}
		if s.InsertQuorum < 0 || s.InsertQuorum > 16 {
			d.problem("state.insert_quorum", "must be from 0 to 16")
		}
	} else if s.InsertQuorum != 0 || s.Table != defaultStateTable {
		d.problem("state.store", "state.table and state.insert_quorum need store clickhouse")
	}
	if s.Lease == LeaseZooKeeper {
		if len(s.ZooKeeper) == 0 {
			d.problem("state.zookeeper", "required with lease zookeeper: host:port of every ZooKeeper server")
		}
		for i, a := range s.ZooKeeper {
			d.hostPort(fmt.Sprintf("state.zookeeper[%d]", i), a, true, false)
		}
		if s.LeasePath == "" && s.Name != "" {
			s.LeasePath = "/binlog2ch/leases/" + s.Name
		}
		if !strings.HasPrefix(s.LeasePath, "/") || strings.HasSuffix(s.LeasePath, "/") || strings.Contains(s.LeasePath, "//") {
			d.problem("state.lease_path", fmt.Sprintf("want an absolute ZooKeeper path such as /binlog2ch/leases/NAME, got %q", s.LeasePath))
		}
		if s.SessionTimeout < time.Second || s.SessionTimeout > 5*time.Minute {
			d.problem("state.session_timeout", "must be from 1s to 5m")
		}
	} else if len(s.ZooKeeper) > 0 || s.LeasePath != "" {
		d.problem("state.lease", "state.zookeeper and state.lease_path need lease zookeeper")
	}
}
