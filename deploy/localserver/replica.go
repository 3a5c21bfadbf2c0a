package localserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Replicas, for the failover tests: a private MariaDB replicating from
// another through GTIDs, which a test can pause, and promote once its
// primary is killed.

// hangBound bounds waits on replication when the caller's context has no
// deadline. It only stops a hang; conditions are polled, never timed.
const hangBound = 2 * time.Minute

var (
	replicaIDMu   sync.Mutex
	lastReplicaID uint32 = DefaultServerID
)

// nextReplicaID picks a server id no other replica of this process has and
// that differs from the primary's, since a replica skips events carrying its
// own server id.
func nextReplicaID(primaryID uint32) uint32 {
	replicaIDMu.Lock()
	defer replicaIDMu.Unlock()
	lastReplicaID++
	if lastReplicaID == primaryID {
		lastReplicaID++
	}
	return lastReplicaID
}

// StartReplica starts a private MariaDB (see StartMariaDBWith; opts.ServerID
// 0 picks an id unused by the primary and by this process's other replicas)
// and makes it a GTID replica of primary, a private MariaDB: it replicates as
// the primary's own user (root), so nothing is written to the primary, starts
// from an empty position, so it streams the primary's binlog from its first
// file, and is read_only until Promote. It returns once both replication
// threads run; WaitReplicaCaughtUp waits for the data.
//
// The replica reconnects every second while its primary is down, and
// resumes replication by itself after a Restart (read_only is then off).
func StartReplica(ctx context.Context, primary *Server, opts MariaDBOptions) (*Server, error) {
	if primary == nil || primary.External || primary.name != "MariaDB" {
		return nil, errors.New("replica: the primary must be a private MariaDB")
	}
	if opts.ServerID == 0 {
		opts.ServerID = nextReplicaID(primary.ServerID)
	}
	if opts.ServerID == primary.ServerID {
		return nil, fmt.Errorf("replica: server id %d is the primary's; the replica would skip its events", opts.ServerID)
	}
	r, err := StartMariaDBWith(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	err = r.withDB(func(db *sql.DB) error {
		if _, err := db.ExecContext(ctx, "SET GLOBAL read_only = ON"); err != nil {
			return fmt.Errorf("read_only: %w", err)
		}
		// MASTER_CONNECT_RETRY=1: the default, 60 s, would stall a test
		// that restarts the primary.
		_, err := db.ExecContext(ctx, "CHANGE MASTER TO MASTER_HOST = ?, MASTER_PORT = ?, MASTER_USER = ?, MASTER_PASSWORD = ?, "+
			"MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1", primary.Host, primary.Port, primary.User, primary.Password)
		if err != nil {
			return fmt.Errorf("CHANGE MASTER: %w", err)
		}
		if _, err := db.ExecContext(ctx, "START SLAVE"); err != nil {
			return fmt.Errorf("START SLAVE: %w", err)
		}
		return nil
	})
	if err == nil {
		err = r.waitReplicating(ctx)
	}
	if err != nil {
		_ = r.Stop()
		return nil, fmt.Errorf("replica of %s: %w", primary.Addr(), err)
	}
	return r, nil
}

// withDB runs fn with a connection pool to the server.
func (s *Server) withDB(fn func(*sql.DB) error) error {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.name, s.Addr(), err)
	}
	defer db.Close()
	if err := fn(db); err != nil {
		return fmt.Errorf("%s %s: %w", s.name, s.Addr(), err)
	}
	return nil
}

// exec runs statements in order.
func (s *Server) exec(ctx context.Context, stmts ...string) error {
	return s.withDB(func(db *sql.DB) error {
		for _, q := range stmts {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}

// GTIDPositions is what a MariaDB's GTID variables say, each a
// comma-separated list of domain-server-seq, one per domain ("" when empty).
type GTIDPositions struct {
	// Binlog is @@gtid_binlog_pos: the last GTID written to this server's
	// binlog, its own transactions and (log_slave_updates) replicated ones.
	Binlog string
	// BinlogState is @@gtid_binlog_state: the last GTID in the binlog of
	// each domain and server id, so it keeps a dead primary's last GTID
	// next to the promoted replica's.
	BinlogState string
	// Current is @@gtid_current_pos: the newer, per domain, of Binlog and
	// Slave.
	Current string
	// Slave is @@gtid_slave_pos: the last GTID the replication SQL thread
	// applied. RESET SLAVE ALL keeps it.
	Slave string
}

// GTIDPositions reads a MariaDB's GTID positions.
func (s *Server) GTIDPositions(ctx context.Context) (GTIDPositions, error) {
	var p GTIDPositions
	err := s.withDB(func(db *sql.DB) error {
		err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_binlog_state, @@GLOBAL.gtid_current_pos, @@GLOBAL.gtid_slave_pos").
			Scan(&p.Binlog, &p.BinlogState, &p.Current, &p.Slave)
		if err != nil {
			return fmt.Errorf("read GTID positions: %w", err)
		}
		return nil
	})
	return p, err
}

// StopReplication stops a replica's replication threads (STOP SLAVE), so it
// misses what its primary writes until StartReplication. The threads have
// stopped when it returns.
func (s *Server) StopReplication(ctx context.Context) error {
	return s.exec(ctx, "STOP SLAVE")
}

// StartReplication starts a replica's replication threads again (START
// SLAVE) and waits until both run.
func (s *Server) StartReplication(ctx context.Context) error {
	if err := s.exec(ctx, "START SLAVE"); err != nil {
		return err
	}
	return s.waitReplicating(ctx)
}

// WaitReplicaCaughtUp waits until the replica has applied every transaction
// in primary's binlog at the time of the call (its @@gtid_binlog_pos). It
// fails early when the replica's SQL thread stops, and otherwise after ctx's
// deadline (two minutes without one), which only bounds a hang.
func (s *Server) WaitReplicaCaughtUp(ctx context.Context, primary *Server) error {
	p, err := primary.GTIDPositions(ctx)
	if err != nil {
		return fmt.Errorf("wait for the replica: %w", err)
	}
	return s.waitApplied(ctx, p.Binlog)
}

// waitApplied waits until the replica's SQL thread has applied pos.
func (s *Server) waitApplied(ctx context.Context, pos string) error {
	if pos == "" {
		return nil
	}
	ctx, cancel := boundHang(ctx)
	defer cancel()
	return s.withDB(func(db *sql.DB) error {
		for {
			// One-second slices, so a stopped SQL thread is seen, and a
			// cancelled ctx leaves no long wait behind on the server.
			var res sql.NullInt64
			if err := db.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 1)", pos).Scan(&res); err != nil {
				return fmt.Errorf("wait for GTID %s: %w", pos, err)
			}
			if res.Valid && res.Int64 == 0 {
				return nil
			}
			st, err := slaveStatus(ctx, db)
			if err != nil {
				return err
			}
			if st == nil {
				return fmt.Errorf("not a replica, cannot reach GTID %s", pos)
			}
			if st["Slave_SQL_Running"] != "Yes" {
				return fmt.Errorf("replication SQL thread stopped at %s before GTID %s (last error: %q)",
					st["Gtid_Slave_Pos"], pos, st["Last_SQL_Error"])
			}
			if ctx.Err() != nil {
				return fmt.Errorf("replica at %s has not reached GTID %s (IO thread %s, last IO error %q): %w",
					st["Gtid_Slave_Pos"], pos, st["Slave_IO_Running"], st["Last_IO_Error"], ctx.Err())
			}
		}
	})
}

// Promote makes a replica a standalone primary, as after its primary died:
// it applies what it has received but not yet applied (when replication
// runs; a stopped one stays where it stopped), forgets its primary (STOP
// SLAVE, RESET SLAVE ALL) and turns read_only off. Its new transactions get
// GTIDs in the same domain with its own server id and the next sequence
// number of its binlog, which continues the primary's (log_slave_updates).
func (s *Server) Promote(ctx context.Context) error {
	st, err := s.slaveStatus(ctx)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if st != nil && st["Slave_SQL_Running"] == "Yes" {
		// Stop receiving first, so the position to drain to is final.
		if err := s.exec(ctx, "STOP SLAVE IO_THREAD"); err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		if st, err = s.slaveStatus(ctx); err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		if err := s.waitApplied(ctx, st["Gtid_IO_Pos"]); err != nil {
			return fmt.Errorf("promote: apply the relay log: %w", err)
		}
	}
	if err := s.exec(ctx, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF"); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	return nil
}

// waitReplicating waits until both replication threads run. It fails when
// a thread stops with an error, since that does not pass by itself.
func (s *Server) waitReplicating(ctx context.Context) error {
	ctx, cancel := boundHang(ctx)
	defer cancel()
	for {
		st, err := s.slaveStatus(ctx)
		if err != nil {
			return err
		}
		if st == nil {
			return fmt.Errorf("%s %s: not a replica", s.name, s.Addr())
		}
		io, sqlThread := st["Slave_IO_Running"], st["Slave_SQL_Running"]
		switch {
		case io == "Yes" && sqlThread == "Yes":
			return nil
		case io == "No" && st["Last_IO_Error"] != "":
			return fmt.Errorf("%s %s: replication IO thread stopped: %s", s.name, s.Addr(), st["Last_IO_Error"])
		case sqlThread == "No" && st["Last_SQL_Error"] != "":
			return fmt.Errorf("%s %s: replication SQL thread stopped: %s", s.name, s.Addr(), st["Last_SQL_Error"])
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: replication not running (IO thread %s, SQL thread %s, last IO error %q): %w",
				s.name, s.Addr(), io, sqlThread, st["Last_IO_Error"], ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) slaveStatus(ctx context.Context) (map[string]string, error) {
	var st map[string]string
	err := s.withDB(func(db *sql.DB) error {
		var err error
		st, err = slaveStatus(ctx, db)
		return err
	})
	return st, err
}

// slaveStatus is SHOW SLAVE STATUS by column name; nil when the server is
// not a replica.
func slaveStatus(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, fmt.Errorf("SHOW SLAVE STATUS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("SHOW SLAVE STATUS: %w", err)
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("SHOW SLAVE STATUS: %w", err)
		}
		return nil, nil
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, fmt.Errorf("SHOW SLAVE STATUS: %w", err)
	}
	st := make(map[string]string, len(cols))
	for i, c := range cols {
		st[c] = vals[i].String
	}
	return st, nil
}

// boundHang gives ctx a deadline of hangBound when it has none.
func boundHang(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, hangBound)
}
