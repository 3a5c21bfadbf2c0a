package failoverready

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	_ "github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// TestAdviceLevels: INFO on a primary, WARN on a replica and after a
// change of server, nothing when every setting is right.
func TestAdviceLevels(t *testing.T) {
	defaults := Settings{Flavor: mysql.MariaDBFlavor, GTIDMode: true, StrictMode: "OFF", LogUpdates: "OFF", LogUpdatesName: "log_slave_updates"}
	for _, c := range []struct {
		name        string
		s           Settings
		otherServer bool
		level       slog.Level
		want        []string // in Msg or Set; nil: no advice
	}{
		{"primary", defaults, false, slog.LevelInfo, []string{"this primary", "gtid_strict_mode = ON", "log_slave_updates = ON on the replicas"}},
		{"other server", defaults, true, slog.LevelWarn, []string{"another MySQL server", "gtid_strict_mode = ON"}},
		{"replica", func() Settings { s := defaults; s.Replica, s.Sources = true, []string{"db1:3306"}; return s }(), false, slog.LevelWarn,
			[]string{"reads from a replica from db1:3306", "log_slave_updates = ON in this replica's server config", "none of what it replicates from db1:3306"}},
		{"role unknown", func() Settings { s := defaults; s.RoleUnknown = "SHOW ALL SLAVES STATUS: denied"; return s }(), false, slog.LevelInfo, []string{"could not be read: SHOW ALL SLAVES STATUS: denied"}},
		{"all set", Settings{Flavor: mysql.MariaDBFlavor, GTIDMode: true, StrictMode: "ON", LogUpdates: "ON", Replica: true}, true, 0, nil},
		{"mysql without gtids", Settings{Flavor: mysql.MySQLFlavor, GTIDModeValue: "OFF", LogUpdates: "ON", LogUpdatesName: "log_replica_updates"}, false, slog.LevelInfo,
			[]string{"gtid_mode = ON with enforce_gtid_consistency = ON", "gtid_mode is OFF"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, ok := c.s.Advice(c.otherServer)
			if ok != (c.want != nil) {
				t.Fatalf("advice %v (%+v), want %v", ok, a, c.want != nil)
			}
			if !ok {
				return
			}
			if a.Level != c.level {
				t.Errorf("level %v, want %v", a.Level, c.level)
			}
			text := a.Msg + " " + strings.Join(a.Set, "; ")
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("advice %q lacks %q", text, w)
				}
			}
		})
	}
}

// TestReadServers reads real servers: the test MariaDB (a primary with
// localserver's failover settings), one with MariaDB's defaults, and a
// replica of it without log_slave_updates, whose advice is a WARN.
func TestReadServers(t *testing.T) {
	srv := servertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	read := func(s *localserver.Server) Settings { return readAs(t, ctx, s.DSN("")) }
	if s := read(srv.MySQL); s.StrictMode != "ON" || s.LogUpdates != "ON" || s.Replica || s.RoleUnknown != "" {
		t.Errorf("the test MariaDB read as %+v", s)
	} else if a, ok := s.Advice(false); ok {
		t.Errorf("advice on a primary with every setting: %+v", a)
	}
	if srv.MySQL.External {
		t.Skip("the rest starts private MariaDBs")
	}
	off := []string{"--gtid-strict-mode=OFF", "--log-slave-updates=OFF"}
	primary, err := localserver.StartMariaDBWith(ctx, localserver.MariaDBOptions{Args: off})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Stop() })
	s := read(primary)
	if s.StrictMode != "OFF" || s.LogUpdates != "OFF" || s.LogUpdatesName != "log_slave_updates" || s.Replica {
		t.Fatalf("a default MariaDB read as %+v", s)
	}
	if a, ok := s.Advice(false); !ok || a.Level != slog.LevelInfo {
		t.Errorf("a default primary's advice: %+v %v, want INFO", a, ok)
	}
	replica, err := localserver.StartReplica(ctx, primary, localserver.MariaDBOptions{Args: off})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Stop() })
	s = read(replica)
	if !s.Replica || len(s.Sources) != 1 || s.Sources[0] != primary.Addr() {
		t.Fatalf("the replica read as %+v; want a replica of %s", s, primary.Addr())
	}
	a, ok := s.Advice(false)
	if !ok || a.Level != slog.LevelWarn || !strings.Contains(strings.Join(a.Set, "; "), "log_slave_updates = ON in this replica's server config") {
		t.Errorf("the replica's advice: %+v %v, want a WARN naming log_slave_updates", a, ok)
	}
	// A user without REPLICA MONITOR cannot read SHOW ALL SLAVES STATUS;
	// Slaves_running still tells.
	db, err := sql.Open("mysql", replica.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE USER monitor@'%' IDENTIFIED BY 'pw'", "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO monitor@'%'"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dsn := strings.Replace(replica.DSN(""), "root@", "monitor:pw@", 1)
	// No sources: read from Slaves_running, not SHOW ALL SLAVES STATUS.
	if s := readAs(t, ctx, dsn); !s.Replica || s.RoleUnknown != "" || len(s.Sources) != 0 {
		t.Errorf("the replica read by a user without REPLICA MONITOR as %+v; want a replica, of no known sources", s)
	}
}

func readAs(t *testing.T, ctx context.Context, dsn string) Settings {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return Read(ctx, db, mysql.MariaDBFlavor)
}

func TestMain(m *testing.M) {
	servertest.Main(m)
}
