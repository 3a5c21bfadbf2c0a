package block

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"
	"github.com/shopspring/decimal"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/schema"
)

func TestMain(m *testing.M) { servertest.Main(m) }

const everyTypeDDL = `CREATE TABLE every_type (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, b1 TINYINT(1), si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  d92 DECIMAL(9,2), d180 DECIMAL(18,0) UNSIGNED, d3810 DECIMAL(38,10), d6530 DECIMAL(65,30),
  f FLOAT, dbl DOUBLE, bit1 BIT(1), bit64 BIT(64),
  dt DATE, dtn DATE NOT NULL DEFAULT '2000-01-01', dtm DATETIME, dtm6 DATETIME(6),
  ts TIMESTAMP NULL DEFAULT NULL, ts3 TIMESTAMP(3) NULL DEFAULT NULL,
  tm TIME, tm3 TIME(3), yr YEAR,
  c CHAR(10), vc VARCHAR(100), txt TEXT, bin BINARY(4), vbin VARBINARY(10), blb BLOB,
  e ENUM('a,b','x','é'), eq ENUM('it''s','x\\y'), s SET('x','y''z','ü'), j JSON, g GEOMETRY
) DEFAULT CHARSET=utf8mb4`

var everyTypeRows = []string{
	// Maxima.
	`(1, 127, 255, 1, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
	  9999999.99, 999999999999999999, 9999999999999999999999999999.9999999999,
	  99999999999999999999999999999999999.999999999999999999999999999999,
	  3.40282e38, 1.7976931348623157e308, b'1', b'1111111111111111111111111111111111111111111111111111111111111111',
	  '2105-12-31', '9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999',
	  '2038-01-19 03:14:07', '2038-01-19 03:14:07.999', '838:59:59', '838:59:59.000', 2155,
	  'emoji🙂中文', 'it''s "q" \\ ,;', REPEAT('long text ', 1000), X'41000000', X'00FF', X'DEADBEEF00',
	  'é', 'x\\y', 'x,y''z,ü', '{"k": [1, "é", null]}', ST_GeomFromText('POINT(1 2)'))`,
	// Minima.
	`(2, -128, 0, -1, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
	  -9999999.99, 0, -9999999999999999999999999999.9999999999,
	  -99999999999999999999999999999999999.999999999999999999999999999999,
	  -3.40282e38, -1.7976931348623157e308, b'0', 0,
	  '1970-01-01', '1000-01-01', '1970-01-01 00:00:00', '1000-01-01 00:00:00.000000',
	  '1970-01-01 00:00:01', '1970-01-01 00:00:01.000', '-838:59:59', '-838:59:58.123', 1901,
	  '', '', '', '', '', '', 'a,b', 'it''s', '', '[]', ST_GeomFromText('LINESTRING(0 0, 1 1)'))`,
	// NULL everywhere it may be.
	`(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	  NULL, '2000-01-01', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	// Zero dates.
	`(4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.01, 1, 0.0000000001, 0.000000000000000000000000000001, 1.5, -0.25, b'1', 1,
	  '0000-00-00', '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', NULL,
	  '00:00:00', '-00:00:00.500', 0, 'a', 'b', 'c', X'00', X'00', X'00', 'x', 'it''s', 'x', '{}', NULL)`,
	// An invalid date, ordinary values.
	`(5, 42, 42, 0, 42, 42, 42, 42, 42, 42, 42, 42, 1234.5, 42, 3.14, 2.718281828459045235360287471352, 0.1, 0.1, b'0', 12345,
	  '2024-00-10', '2024-02-29', '2024-02-29 12:34:56', '2024-02-29 12:34:56.5', '2024-02-29 12:34:56', '2024-02-29 12:34:56.7',
	  '12:34:56', '123:45:06.789', 2024, 'ÅÄÖ', 'Ελληνικά', 'ok', X'FF', X'', X'', 'é', 'x\\y', 'y''z,ü', '"s"', ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'))`,
}

// decodeRows reads every rows event of table db.every_type from pos on,
// with go-mysql configured as given.
func decodeRows(t *testing.T, srv *localserver.Servers, flavor string, pos gomysql.Position, db string, parseTime bool, want int) [][]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 4243, Flavor: flavor, Host: srv.MySQL.Host, Port: uint16(srv.MySQL.Port),
		User: srv.MySQL.User, Password: srv.MySQL.Password,
		ParseTime: parseTime, TimestampStringLocation: time.UTC, Logger: slog.New(slog.DiscardHandler),
	})
	defer syncer.Close()
	stream, err := syncer.StartSync(pos)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for len(rows) < want {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			t.Fatalf("binlog: %v (have %d of %d rows)", err, len(rows), want)
		}
		if re, ok := ev.Event.(*replication.RowsEvent); ok && string(re.Table.Schema) == db && string(re.Table.Table) == "every_type" {
			for _, r := range re.Rows {
				// Copy: []byte values point into the event buffer.
				row := make([]any, len(r))
				for i, v := range r {
					if b, ok := v.([]byte); ok {
						v = append([]byte(nil), b...)
					}
					row[i] = v
				}
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// rawImages returns the row images of every_type's write-rows events from
// pos on, undecoded, and the table map they were written with.
func rawImages(t *testing.T, srv *localserver.Servers, flavor string, pos gomysql.Position, db string) ([][]byte, *replication.TableMapEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var images [][]byte
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 4244, Flavor: flavor, Host: srv.MySQL.Host, Port: uint16(srv.MySQL.Port),
		User: srv.MySQL.User, Password: srv.MySQL.Password, Logger: slog.New(slog.DiscardHandler),
		RowsEventDecodeFunc: func(e *replication.RowsEvent, data []byte) error {
			p, err := e.DecodeHeader(data)
			if err == nil && string(e.Table.Table) == "every_type" {
				images = append(images, append([]byte(nil), data[p:]...))
			}
			return err
		},
	})
	defer syncer.Close()
	stream, err := syncer.StartSync(pos)
	if err != nil {
		t.Fatal(err)
	}
	var table *replication.TableMapEvent
	for {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			t.Fatalf("binlog: %v", err)
		}
		switch e := ev.Event.(type) {
		case *replication.RowsEvent:
			if string(e.Table.Schema) == db && string(e.Table.Table) == "every_type" {
				table = e.Table
			}
		case *replication.XIDEvent:
			// The transaction's rows events were all decoded before its XID
			// arrived here, so images is complete and safe to read.
			if table != nil {
				return images, table
			}
		}
	}
}

// TestEveryTypeThroughTheBinlog writes every MySQL type with edge values,
// decodes the rows from the binlog (and, as Result, reads them as a table
// copy does), converts them, writes them to ClickHouse, and compares every
// value with what MySQL returns for it.
func TestEveryTypeThroughTheBinlog(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	db := servertest.Name("b2c_schema")

	my := openMySQL(t, srv, "")
	flavor := gomysql.MySQLFlavor
	var version string
	if err := my.QueryRow("SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		flavor = gomysql.MariaDBFlavor
	}
	pos := masterPos(t, my)
	conn, err := my.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"SET SESSION sql_mode = ''", "SET time_zone = '+00:00'",
		"CREATE DATABASE " + db, "USE " + db, everyTypeDDL,
		"INSERT INTO every_type VALUES " + strings.Join(everyTypeRows, ",\n"),
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })

	table, err := schema.LoadTable(ctx, my, db, "every_type")
	if err != nil {
		t.Fatal(err)
	}
	if got := table.Columns[table.ColumnIndex("eq")].Labels; !reflect.DeepEqual(got, []string{"it's", `x\y`}) {
		t.Fatalf("ENUM labels parsed as %q", got)
	}

	ch := openClickHouse(t, srv)
	caps, err := schema.DetectCapabilities(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Exec(context.Background(), "DROP DATABASE "+db) })

	want := mysqlCanonical(t, srv, db, table)
	n := len(everyTypeRows)
	decoded := map[string][][]any{
		"ParseTime":   decodeRows(t, srv, flavor, pos, db, true, n),
		"NoParseTime": decodeRows(t, srv, flavor, pos, db, false, n),
	}
	// The same events decoded by binlog2ch itself from the binlog bytes.
	images, tableMap := rawImages(t, srv, flavor, pos, db)
	rawTable := *table
	rawTable.Columns = append([]schema.Column(nil), table.Columns...)
	for i := range rawTable.Columns {
		rawTable.Columns[i].BinlogType, rawTable.Columns[i].BinlogMeta = tableMap.ColumnType[i], tableMap.ColumnMeta[i]
	}
	decoded["Raw"] = nil
	// The same rows as a table copy reads them (binary result rows).
	resCols, resRows, resCount := readResult(t, srv, db, table)
	if resCount != n {
		t.Fatalf("the table copy's SELECT returned %d rows, want %d", resCount, n)
	}
	decoded["Result"] = nil

	// What the invalid_dates policies change, on a server with the legacy
	// date range (18.16) and on a modern one.
	minDate, maxDate, minDT, maxDT := "1970-01-01", "2149-06-06", "1970-01-01 00:00:00", "2106-02-07 06:28:15"
	if caps.LegacyDateRange {
		maxDate, maxDT = "2105-12-31", "2105-12-31 23:59:59"
	}
	if caps.Date32 {
		minDate, maxDate = "1900-01-01", "2299-12-31"
	}
	clamp := map[string]string{
		"2/dtn": minDate, "1/dtn": maxDate,
		"4/dt": minDate, "4/dtn": minDate, "4/dtm": minDT, "4/ts": minDT,
		"5/dt": minDate,
	}
	null := map[string]string{"4/dt": "NULL", "4/dtm": "NULL", "4/ts": "NULL", "5/dt": "NULL", "2/dtn": minDate, "1/dtn": maxDate, "4/dtn": minDate}
	clamp["1/dtm"], null["1/dtm"] = maxDT, "NULL"

	for _, policy := range []struct {
		name      string
		overrides map[string]string
		fixups    [numFixups]uint64
	}{
		{schema.InvalidClamp, clamp, [numFixups]uint64{4, 1, 3}},
		{schema.InvalidNull, null, [numFixups]uint64{4, 1, 3}},
	} {
		for how, rows := range decoded {
			t.Run(policy.name+"/"+how, func(t *testing.T) {
				opts := schema.DefaultOptions()
				opts.InvalidDates = policy.name
				src := table
				if how == "Raw" {
					src = &rawTable
				}
				target, err := schema.Map(src, db, caps, opts, schema.TableOptions{Name: "every_type_" + policy.name + "_" + how})
				if err != nil {
					t.Fatal(err)
				}
				if err := ch.Exec(ctx, target.CreateTableSQL()); err != nil {
					t.Fatalf("%s\n%v", target.CreateTableSQL(), err)
				}
				block := NewBlock(target)
				for i, r := range rows {
					if err := block.Append(r, uint64(i+1), schema.OpInsert); err != nil {
						t.Fatal(err)
					}
				}
				if how == "Result" {
					if _, err := block.AppendResultRows(resCols, resRows, 1, schema.OpInsert); err != nil {
						t.Fatal(err)
					}
				}
				if how == "Raw" {
					if !block.RawOK() {
						t.Fatal("every_type is not decodable from binlog bytes")
					}
					v := uint64(1)
					for _, data := range images {
						for len(data) > 0 {
							n, err := block.AppendImage(data, v, schema.OpInsert)
							if err != nil {
								t.Fatal(err)
							}
							data = data[n:]
							v++
						}
					}
					if block.Rows() != n {
						t.Fatalf("decoded %d rows from the binlog bytes, want %d", block.Rows(), n)
					}
				}
				// The counts hold for ClickHouse 18.16, where DATETIME(6) is text.
				if !caps.DateTime64 && block.Fixups != policy.fixups {
					t.Errorf("fix-ups %v, want %v", block.Fixups, policy.fixups)
				}
				batch, err := ch.PrepareBatch(ctx, target.InsertSQL())
				if err != nil {
					t.Fatal(err)
				}
				if err := block.AppendTo(batch); err != nil {
					t.Fatal(err)
				}
				if err := batch.Send(); err != nil {
					t.Fatal(err)
				}
				got := clickHouseCanonical(t, ch, target)
				compare(t, table, want, got, policy.overrides)
				if how == "Raw" || how == "Result" {
					checkKeyHashes(t, ch, target, block)
				}
			})
		}
	}

	t.Run("error policy names the column", func(t *testing.T) {
		target, err := schema.Map(table, db, caps, schema.DefaultOptions(), schema.TableOptions{})
		if err != nil {
			t.Fatal(err)
		}
		block := NewBlock(target)
		err = block.Append(decoded["ParseTime"][0], 1, schema.OpInsert)
		var ce *ConvertError
		if !errors.As(err, &ce) || ce.Column != "dtn" || !strings.Contains(err.Error(), db+".every_type.dtn (date): date outside the ClickHouse type's range; set schema.invalid_dates") {
			t.Fatalf("got %v", err)
		}
		if block.Rows() != 0 {
			t.Fatalf("a failed row left %d rows in the block", block.Rows())
		}
	})
}

func compare(t *testing.T, table *schema.Table, want, got map[int][]string, overrides map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ClickHouse has %d rows, MySQL %d", len(got), len(want))
	}
	for id, wrow := range want {
		grow, ok := got[id]
		if !ok {
			t.Errorf("row %d missing in ClickHouse", id)
			continue
		}
		for i, c := range table.Columns {
			w := wrow[i]
			if o, ok := overrides[strconv.Itoa(id)+"/"+c.Name]; ok {
				w = o
			}
			if grow[i] != w {
				t.Errorf("row %d column %s (%s): ClickHouse %q, want %q", id, c.Name, c.Type, trunc(grow[i]), trunc(w))
			}
		}
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func openMySQL(t *testing.T, srv *localserver.Servers, db string) *sql.DB {
	t.Helper()
	my, err := sql.Open("mysql", srv.MySQL.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { my.Close() })
	return my
}

func openClickHouse(t *testing.T, srv *localserver.Servers) driver.Conn {
	t.Helper()
	ch, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{srv.ClickHouse.Addr()},
		Auth:        clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password},
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	return ch
}

func masterPos(t *testing.T, my *sql.DB) gomysql.Position {
	t.Helper()
	rows, err := my.Query("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		t.Fatal("SHOW MASTER STATUS: no binlog")
	}
	var p gomysql.Position
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(sql.RawBytes)
	}
	dest[0], dest[1] = &p.Name, &p.Pos
	if err := rows.Scan(dest...); err != nil {
		t.Fatal(err)
	}
	return p
}

// mysqlCanonical reads the table over the binary protocol (exact floats) and
// renders each value as the ClickHouse side will be rendered.
func mysqlCanonical(t *testing.T, srv *localserver.Servers, db string, table *schema.Table) map[int][]string {
	t.Helper()
	cfg, err := mysql.ParseDSN(srv.MySQL.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	cfg.InterpolateParams = false // binary protocol: floats arrive exactly
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	my, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	rows, err := my.Query("SELECT * FROM every_type WHERE id > ? ORDER BY id", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int][]string{}
	for rows.Next() {
		vals := make([]any, len(table.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = mysqlText(table.Columns[i], v)
		}
		id, _ := strconv.Atoi(row[0])
		out[id] = row
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mysqlText(c schema.Column, v any) string {
	if v == nil {
		return "NULL"
	}
	switch c.Kind {
	case schema.KindBit:
		b := v.([]byte)
		var buf [8]byte
		copy(buf[8-len(b):], b)
		return strconv.FormatUint(binary.BigEndian.Uint64(buf[:]), 10)
	case schema.KindGeometry:
		return string(appendHex(nil, v.([]byte)))
	}
	switch x := v.(type) {
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprintf("unexpected %T", v)
}

// clickHouseCanonical reads the target table and renders each value.
func clickHouseCanonical(t *testing.T, ch driver.Conn, target *schema.Target) map[int][]string {
	t.Helper()
	var cols []string
	for _, c := range target.Columns {
		if c.Meta == schema.MetaNone {
			cols = append(cols, schema.QuoteIdent(c.Name))
		}
	}
	rows, err := ch.Query(context.Background(), "SELECT "+strings.Join(cols, ", ")+" FROM "+schema.QuoteIdent(target.Database)+"."+schema.QuoteIdent(target.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	out := map[int][]string{}
	for rows.Next() {
		dest := make([]any, len(types))
		for i, ct := range types {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(dest))
		for i, d := range dest {
			row[i] = chText(target.Columns[i].Type, reflect.ValueOf(d).Elem().Interface())
		}
		id, _ := strconv.Atoi(row[0])
		out[id] = row
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func chText(typ schema.CHType, v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "NULL"
		}
		v = rv.Elem().Interface()
	}
	switch x := v.(type) {
	case string:
		return x
	case []string:
		return strings.Join(x, ",")
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case decimal.Decimal:
		return x.StringFixed(int32(typ.Scale))
	case time.Time:
		switch typ.Kind {
		case schema.CHDate, schema.CHDate32:
			return x.UTC().Format(time.DateOnly)
		case schema.CHDateTime64:
			if typ.Scale > 0 {
				return x.UTC().Format("2006-01-02 15:04:05." + strings.Repeat("0", typ.Scale))
			}
		}
		return x.UTC().Format(time.DateTime)
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10)
	}
	return fmt.Sprintf("unexpected %T", v)
}

// TestGoldenDDLRunsOnTheServer creates every golden table for the server's
// profile, then runs the profile's other statements on them in order
// (testdata/ddl/statements.*.sql), so the golden text is known to be
// accepted, not just stable. The cluster variants need a cluster and are
// pinned as text only.
func TestGoldenDDLRunsOnTheServer(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	ch := openClickHouse(t, srv)
	caps, err := schema.DetectCapabilities(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	profile := "clickhouse18"
	if caps.IsDeleted {
		profile = "modern"
	}
	db := servertest.Name("b2c_golden")
	if err := ch.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Exec(context.Background(), "DROP DATABASE "+db) })
	files, err := filepath.Glob(filepath.Join("..", "testdata", "ddl", "*."+profile+".sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files for %s: %v", profile, err)
	}
	statements := ""
	for _, f := range files {
		switch name := filepath.Base(f); {
		case strings.Contains(name, "_cluster."):
			continue
		case strings.HasPrefix(name, "statements."):
			statements = f
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		create, _, _ := strings.Cut(string(data), ";")
		create = strings.Replace(create, "`analytics`", "`"+db+"`", 1)
		if err := ch.Exec(ctx, create); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if statements == "" {
		t.Fatalf("no statements.%s.sql", profile)
	}
	data, err := os.ReadFile(statements)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range strings.Split(string(data), ";\n") {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			continue // a refusal, pinned as its error text
		}
		q := strings.ReplaceAll(strings.Join(lines, "\n"), "`analytics`", "`"+db+"`")
		if err := ch.Exec(ctx, q); err != nil {
			t.Errorf("%s: %s: %v", statements, q, err)
		}
		n++
	}
	if n < 10 {
		t.Errorf("%s: only %d statements ran", statements, n)
	}
}

func TestLoadTableKeys(t *testing.T) {
	srv := servertest.Need(t)
	ctx := context.Background()
	my := openMySQL(t, srv, "")
	db := servertest.Name("b2c_keys")
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".pk (a INT NOT NULL, b VARCHAR(5) NOT NULL, c INT, UNIQUE KEY u (c), PRIMARY KEY (b, a))",
		"CREATE TABLE " + db + ".uk (a INT, b INT NOT NULL, c INT NOT NULL, UNIQUE KEY n (a), UNIQUE KEY z (c, b))",
		"CREATE TABLE " + db + ".none (a INT, b INT, KEY k (a))",
	} {
		if _, err := my.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = my.Exec("DROP DATABASE " + db) })
	for name, want := range map[string][2][]int{
		"pk":   {{1, 0}, nil},
		"uk":   {nil, {2, 1}}, // the nullable unique key n is skipped
		"none": {nil, nil},
	} {
		tb, err := schema.LoadTable(ctx, my, db, name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tb.PrimaryKey, want[0]) || !reflect.DeepEqual(tb.UniqueKey, want[1]) {
			t.Errorf("%s: primary %v unique %v, want %v %v", name, tb.PrimaryKey, tb.UniqueKey, want[0], want[1])
		}
	}
	if _, err := schema.LoadTable(ctx, my, db, "missing"); err == nil || !strings.Contains(err.Error(), "table "+db+".missing does not exist") {
		t.Errorf("missing table: %v", err)
	}
}
