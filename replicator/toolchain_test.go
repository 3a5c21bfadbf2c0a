package replicator

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	_ "github.com/go-sql-driver/mysql"
	"github.com/shopspring/decimal"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/source"
)

// envPoison has a test's daemon children poison released binlog buffers
// as the test binary does.
const envPoison = "BINLOG2CH_TEST_POISON_RELEASED"

func TestMain(m *testing.M) {
	// Every test reads the binlog with the buffers the stream hands back
	// poisoned (binlog.PoisonReleased): a row still read from one would
	// not verify equal. Benchmarks measure without.
	flag.Parse()
	child := os.Getenv(envDaemon) != "" || os.Getenv(envFullSync) != ""
	if f := flag.Lookup("test.bench"); os.Getenv(envPoison) != "" || !child && f != nil && f.Value.String() == "" {
		os.Setenv(envPoison, "1")
		binlog.PoisonReleased(true)
	}
	if cfg := os.Getenv(envDaemon); cfg != "" {
		os.Exit(daemonMain(cfg))
	}
	if cfg := os.Getenv(envFullSync); cfg != "" {
		os.Exit(fullSyncMain(cfg))
	}
	servertest.Main(m)
}

// TestToolchain proves the whole chain works on this machine: a row written
// to MySQL is read back from the binlog with go-mysql, inserted into
// ClickHouse with clickhouse-go (explicit column list, columnar appends, LZ4)
// and read back unchanged.
func TestToolchain(t *testing.T) {
	srv := servertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	my, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	var version string
	if err := my.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	flavor := mysql.MySQLFlavor
	if strings.Contains(strings.ToLower(version), "mariadb") {
		flavor = mysql.MariaDBFlavor
	}
	start, err := source.CurrentPosition(ctx, my)
	if err != nil {
		t.Fatal(err)
	}

	db := servertest.Name("b2c_toolchain")
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id BIGINT UNSIGNED PRIMARY KEY, name VARCHAR(50) NOT NULL, amount DECIMAL(20,4) NOT NULL, created DATETIME NOT NULL)",
		"INSERT INTO " + db + ".t VALUES (18446744073709551615, 'zoë ''quoted''', -1234567890123456.7891, '2024-02-29 23:59:58')",
	} {
		if _, err := my.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })

	// Read the row back from the binlog.
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 4242, Flavor: flavor,
		Host: srv.MySQL.Host, Port: uint16(srv.MySQL.Port), User: srv.MySQL.User, Password: srv.MySQL.Password,
		ParseTime: true, Logger: slog.New(slog.DiscardHandler),
	})
	defer syncer.Close()
	stream, err := syncer.StartSync(mysql.Position{Name: start.File, Pos: start.Pos})
	if err != nil {
		t.Fatal(err)
	}
	var row []any
	for row == nil {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			t.Fatalf("reading the binlog: %v", err)
		}
		if re, ok := ev.Event.(*replication.RowsEvent); ok && string(re.Table.Schema) == db && string(re.Table.Table) == "t" {
			row = re.Rows[0]
		}
	}
	id, ok1 := row[0].(uint64)
	name, ok2 := row[1].(string)
	amount, ok3 := row[2].(string)
	created, ok4 := row[3].(time.Time)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("binlog row has unexpected Go types: %#v", row)
	}

	// Write it to ClickHouse with columnar appends.
	ch, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{srv.ClickHouse.Addr()},
		Auth:        clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password},
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id UInt64, name String, amount Decimal(20,4), created DateTime('UTC')) ENGINE = MergeTree ORDER BY id",
	} {
		if err := ch.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _ = ch.Exec(context.Background(), "DROP DATABASE "+db) })
	dec, err := decimal.NewFromString(amount)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := ch.PrepareBatch(ctx, "INSERT INTO "+db+".t (id, name, amount, created)")
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(
		batch.Column(0).Append([]uint64{id}),
		batch.Column(1).Append([]string{name}),
		batch.Column(2).Append([]decimal.Decimal{dec}),
		batch.Column(3).Append([]time.Time{created}),
	); err != nil {
		t.Fatal(err)
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}

	// Read it back.
	var (
		gotID      uint64
		gotName    string
		gotAmount  decimal.Decimal
		gotCreated time.Time
	)
	if err := ch.QueryRow(ctx, "SELECT id, name, amount, created FROM "+db+".t").Scan(&gotID, &gotName, &gotAmount, &gotCreated); err != nil {
		t.Fatal(err)
	}
	if gotID != 18446744073709551615 || gotName != "zoë 'quoted'" || gotAmount.String() != "-1234567890123456.7891" ||
		gotCreated.UTC().Format(time.DateTime) != "2024-02-29 23:59:58" {
		t.Fatalf("ClickHouse returned id=%d name=%q amount=%s created=%s", gotID, gotName, gotAmount, gotCreated.UTC())
	}
	t.Logf("MySQL %s (%s) -> binlog %s -> ClickHouse: row intact", version, flavor, start)
}
