// Package failoverready reads what following a failover of the MySQL
// source by GTIDs depends on, as the server binlog2ch reads has it (its
// GTID settings, log_slave_updates, whether it is itself a replica), and
// says what to tell the operator at start, and at which level: INFO on a
// primary, where nothing is wrong until a failover comes; WARN where the
// settings matter now. It never changes a server's setting and never
// stops the daemon: the stream works without a failover ever coming.
package failoverready

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Settings is what one server has of what a failover depends on.
type Settings struct {
	Flavor string // mysql.MySQLFlavor or mysql.MariaDBFlavor
	// GTIDMode: the server writes GTIDs (always on MariaDB; MySQL's
	// gtid_mode ON). GTIDModeValue is MySQL's gtid_mode as read.
	GTIDMode      bool
	GTIDModeValue string
	// StrictMode is MariaDB's gtid_strict_mode, ON or OFF ("" on MySQL,
	// or not read).
	StrictMode string
	// LogUpdates is log_replica_updates (log_slave_updates on MariaDB
	// and older MySQL), ON or OFF ("" when not read); LogUpdatesName is
	// the name the server knows it by.
	LogUpdates, LogUpdatesName string
	// Replica: a replication thread of the server runs or is connecting;
	// Sources are the servers it replicates from, host:port.
	Replica bool
	Sources []string
	// RoleUnknown says why the server's role could not be read ("" when
	// it was).
	RoleUnknown string
}

// Read reads a server's settings. A variable the server does not have,
// or the user may not read, stays "".
func Read(ctx context.Context, db *sql.DB, flavor string) Settings {
	s := Settings{Flavor: flavor}
	if flavor == mysql.MariaDBFlavor {
		s.GTIDMode = true
		s.StrictMode = onOff(readVar(ctx, db, "gtid_strict_mode"))
	} else if v := readVar(ctx, db, "gtid_mode"); v != "" {
		s.GTIDModeValue = v
		s.GTIDMode = strings.EqualFold(v, "ON")
	}
	// MySQL 8.0.26 renamed it; MariaDB and older MySQL know the old name.
	for _, name := range []string{"log_replica_updates", "log_slave_updates"} {
		if v := readVar(ctx, db, name); v != "" {
			s.LogUpdates, s.LogUpdatesName = onOff(v), name
			break
		}
	}
	s.readRole(ctx, db)
	return s
}

func readVar(ctx context.Context, db *sql.DB, name string) string {
	var v sql.NullString
	if db.QueryRowContext(ctx, "SELECT @@GLOBAL."+name).Scan(&v) != nil {
		return ""
	}
	return v.String
}

func onOff(v string) string {
	switch strings.ToUpper(v) {
	case "1", "ON":
		return "ON"
	case "0", "OFF":
		return "OFF"
	}
	return v
}

// readRole reads whether the server replicates from another: MariaDB's
// SHOW ALL SLAVES STATUS (every connection of a multi-source replica),
// MySQL's SHOW REPLICA STATUS (8.0.22+; SHOW SLAVE STATUS before, one
// row per channel). MariaDB 10.5.9+ asks REPLICA MONITOR for it, which
// binlog2ch's grants do not include: the Slaves_running status variable,
// which anyone may read, then says whether a replica's SQL thread runs.
func (s *Settings) readRole(ctx context.Context, db *sql.DB) {
	queries := []string{"SHOW REPLICA STATUS", "SHOW SLAVE STATUS"}
	if s.Flavor == mysql.MariaDBFlavor {
		queries = []string{"SHOW ALL SLAVES STATUS"}
	}
	var err error
	for _, q := range queries {
		if err = s.readStatus(ctx, db, q); err == nil {
			return
		}
		var me *mysql.MyError
		if !(errors.As(err, &me) && me.Code == mysql.ER_PARSE_ERROR) {
			break
		}
	}
	if s.Flavor == mysql.MariaDBFlavor {
		var name, v string
		if db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Slaves_running'").Scan(&name, &v) == nil {
			n, _ := strconv.Atoi(v)
			s.Replica = n > 0
			return
		}
	}
	s.RoleUnknown = fmt.Sprintf("%s: %v", queries[len(queries)-1], err)
}

// readStatus reads one replication status statement's rows, by column
// name (their order and names vary with the version: Slave_IO_Running,
// Replica_IO_Running; Master_Host, Source_Host).
func (s *Settings) readStatus(ctx context.Context, db *sql.DB, query string) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = string(vals[i])
		}
		pick := func(names ...string) string {
			for _, n := range names {
				if v, ok := row[n]; ok {
					return v
				}
			}
			return ""
		}
		io := pick("Slave_IO_Running", "Replica_IO_Running")
		if !(io == "Yes" || io == "Connecting" || pick("Slave_SQL_Running", "Replica_SQL_Running") == "Yes") {
			continue // configured, but stopped: not replicating now
		}
		s.Replica = true
		if host := pick("Master_Host", "Source_Host"); host != "" {
			s.Sources = append(s.Sources, host+":"+pick("Master_Port", "Source_Port"))
		}
	}
	return rows.Err()
}

// Advice is what to tell the operator at start.
type Advice struct {
	Level slog.Level
	Msg   string
	// Set is what to set, each with why.
	Set []string
}

// Advice is what to tell the operator at start, false when nothing:
// INFO on a primary, WARN on a replica or when otherServer (the
// checkpoint is of another server: a failover happened, and this
// server's settings decided how it was followed).
func (s Settings) Advice(otherServer bool) (Advice, bool) {
	var set []string
	if s.Flavor == mysql.MariaDBFlavor {
		if s.StrictMode == "OFF" {
			set = append(set, "gtid_strict_mode = ON on this server and its replicas (after a failover binlog2ch reads by GTID in strict mode: a domain whose sequence numbers go backwards stops it rather than let it guess)")
		}
	} else if !s.GTIDMode {
		set = append(set, "gtid_mode = ON with enforce_gtid_consistency = ON on every server (gtid_mode is "+orUnknown(s.GTIDModeValue)+": without GTIDs binlog2ch cannot find its place in another server's binlog, and a failover means a re-copy)")
	}
	name := s.LogUpdatesName
	if name == "" {
		name = "log_slave_updates"
	}
	switch {
	case s.LogUpdates != "OFF":
	case s.Replica:
		// Not a failover's matter: the stream misses changes today.
		set = append(set, name+" = ON in this replica's server config, then restart it: it is OFF, so this replica's binlog holds only what is written on it directly and none of what it replicates"+from(s.Sources)+", and binlog2ch sees none of those changes")
	default:
		set = append(set, name+" = ON on the replicas that may be promoted (no matter on this primary, where it is OFF: a promoted replica's binlog must hold what it replicated)")
	}
	if len(set) == 0 {
		return Advice{}, false
	}
	a := Advice{Level: slog.LevelInfo, Set: set}
	switch {
	case s.Replica:
		a.Level, a.Msg = slog.LevelWarn, "binlog2ch reads from a replica"+from(s.Sources)+": its settings decide whether a failover of its primary, or its own promotion, can be followed without a re-copy, and what its binlog holds. Set"
	case otherServer:
		a.Level, a.Msg = slog.LevelWarn, "the checkpoint is of another MySQL server (a failover): following it, and the next, depends on this server's settings. Set"
	default:
		a.Msg = "to follow a failover of this primary to one of its replicas without a re-copy, set"
		if s.RoleUnknown != "" {
			a.Msg = "to follow a failover of this server to one of its replicas without a re-copy (read as a primary; whether it is a replica could not be read: " + s.RoleUnknown + "), set"
		}
	}
	return a, true
}

func from(sources []string) string {
	if len(sources) == 0 {
		return ""
	}
	return " from " + strings.Join(sources, ", ")
}

func orUnknown(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}
