package mysqlproto

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	_ "github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

func dial(t *testing.T, srv *localserver.Servers) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), Options{Addr: srv.MySQL.Addr(), User: srv.MySQL.User, Password: srv.MySQL.Password,
		Session: []string{"SET time_zone = '+00:00'"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readAll reads a result set's rows, maxBytes at a time, checking each
// read brings at least one row.
func readAll(t *testing.T, r *Result, maxBytes int) ([][]byte, []byte) {
	t.Helper()
	var rows [][]byte
	var all []byte
	for !r.Done() {
		data, n, err := r.ReadRows(context.Background(), nil, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && !r.Done() {
			t.Fatal("a read brought no row")
		}
		all = append(all, data...)
		for k := 0; k < n; k++ {
			row, rest, ok := NextRow(data)
			if !ok {
				t.Fatalf("row %d of %d cut short", k, n)
			}
			rows = append(rows, append([]byte(nil), row...))
			data = rest
		}
		if len(data) != 0 {
			t.Fatalf("%d bytes after the rows", len(data))
		}
	}
	return rows, all
}

// textRow splits a text-protocol row into its values (nil for NULL).
func textRow(t *testing.T, row []byte) [][]byte {
	t.Helper()
	var vals [][]byte
	for len(row) > 0 {
		if row[0] == 0xfb {
			vals, row = append(vals, nil), row[1:]
			continue
		}
		v, rest, ok := lenencBytes(row)
		if !ok {
			t.Fatalf("malformed text row %q", row)
		}
		vals, row = append(vals, v), rest
	}
	return vals
}

// TestQueries runs statements in both protocols and reads their rows
// whole and in pieces of every size: the same rows, framed alike.
func TestQueries(t *testing.T) {
	srv := servertest.Need(t)
	c := dial(t, srv)
	ctx := context.Background()
	if c.ServerVersion == "" {
		t.Error("no server version")
	}
	if err := c.Exec(ctx, "SET @x = 1"); err != nil {
		t.Fatal(err)
	}
	var se *ServerError
	if err := c.Exec(ctx, "SELEKT 1"); !errors.As(err, &se) || se.Code != 1064 || se.State != "42000" || !c.Usable() {
		t.Fatalf("a syntax error: %v (usable %v)", err, c.Usable())
	}

	q := "SELECT seq, CONCAT('row ', seq), IF(seq % 3 = 0, NULL, seq * 1.5), @@time_zone FROM mysql.seq_1_to_2000"
	r, err := c.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if r.Binary || len(r.Columns) != 4 || r.Columns[0].Name != "seq" || r.Columns[0].Type != gomysql.MYSQL_TYPE_LONGLONG || r.Columns[0].Flags&UnsignedFlag == 0 {
		t.Fatalf("columns %+v", r.Columns)
	}
	rows, whole := readAll(t, r, 1<<20)
	if len(rows) != 2000 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, row := range rows {
		v := textRow(t, row)
		want := [][]byte{[]byte(strconv.Itoa(i + 1)), []byte("row " + strconv.Itoa(i+1)), nil, []byte("+00:00")}
		if (i+1)%3 != 0 {
			want[2] = []byte(strconv.FormatFloat(float64(i+1)*1.5, 'f', 1, 64))
		}
		if len(v) != 4 || !bytes.Equal(v[0], want[0]) || !bytes.Equal(v[1], want[1]) || (v[2] == nil) != (want[2] == nil) || !bytes.Equal(v[2], want[2]) || !bytes.Equal(v[3], want[3]) {
			t.Fatalf("row %d: %q, want %q", i, v, want)
		}
	}
	for _, max := range []int{1, 7, 100, 4096, 65536} {
		r, err := c.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if _, pieces := readAll(t, r, max); !bytes.Equal(pieces, whole) {
			t.Fatalf("read %d bytes at a time: other rows", max)
		}
	}

	// Rows that come after a pause, fewer bytes than a batch read waits
	// for (the first two fill the server's network buffer and are sent at
	// once, the last two come with the end of the result), come whole.
	r, err = c.Query(ctx, "SELECT seq, IF(seq = 3, SLEEP(0.2), 0), REPEAT('x', 20000) FROM mysql.seq_1_to_4")
	if err != nil {
		t.Fatal(err)
	}
	if rows, _ := readAll(t, r, 1<<20); len(rows) != 4 {
		t.Fatalf("%d rows after a pause", len(rows))
	}

	// Prepared: parameters of each type come back as binary values.
	stmt, err := c.Prepare(ctx, "SELECT ?, ?, ?, ?, ?, seq FROM mysql.seq_1_to_3")
	if err != nil {
		t.Fatal(err)
	}
	r, err = stmt.Query(ctx, int64(-5), uint64(1<<63+1), "it's", []byte{0, 1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Binary {
		t.Fatal("a prepared statement's rows in the text protocol")
	}
	rows, _ = readAll(t, r, 10)
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	row := rows[2]
	// Header, NULL bitmap (7 columns + 2 bits: 1 byte) with the fifth
	// value NULL, then the values.
	if row[0] != 0 || row[1] != 1<<(4+2) {
		t.Fatalf("row %x", row)
	}
	p := row[2:]
	if got := int64(binary.LittleEndian.Uint64(p)); got != -5 {
		t.Fatalf("int64 %d", got)
	}
	if got := binary.LittleEndian.Uint64(p[8:]); got != 1<<63+1 {
		t.Fatalf("uint64 %d", got)
	}
	s, rest, _ := lenencBytes(p[16:])
	b, rest, _ := lenencBytes(rest)
	if string(s) != "it's" || !bytes.Equal(b, []byte{0, 1, 2}) || binary.LittleEndian.Uint64(rest) != 3 {
		t.Fatalf("values %q %q %x", s, b, rest)
	}
	if err := stmt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.Query(ctx); err == nil {
		t.Fatal("a closed statement ran")
	}
	if !c.Usable() {
		t.Fatal("the connection broke")
	}
}

// TestRowsAroundThePacketSize reads rows whose payloads end just below, at
// and just above MySQL's packet size (2^24-1 bytes, after which a row
// continues in another packet), in both protocols, with rows around them.
func TestRowsAroundThePacketSize(t *testing.T) {
	srv := servertest.Need(t)
	root, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := root.Exec("SET GLOBAL max_allowed_packet = 67108864"); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv) // logs in after the change: the session takes the global value
	ctx := context.Background()
	// A text row of one value is its length-encoded length (4 bytes from
	// 2^16, 9 from 2^24) and the value.
	var lens []int
	for _, payload := range []int{maxPayload - 1, maxPayload, maxPayload + 1, 2 * maxPayload} {
		n := payload - 4
		if n >= 1<<24 {
			n = payload - 9
		}
		lens = append(lens, n)
	}
	var sel []string
	for i, n := range lens {
		sel = append(sel, "SELECT "+strconv.Itoa(i)+" AS k, REPEAT('x', "+strconv.Itoa(n)+") AS v")
		sel = append(sel, "SELECT "+strconv.Itoa(i)+".5, 'small'")
	}
	q := "SELECT v FROM (" + strings.Join(sel, " UNION ALL ") + ") t ORDER BY k"
	r, err := c.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := readAll(t, r, 1<<20)
	if len(rows) != 2*len(lens) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, n := range lens {
		if v := textRow(t, rows[2*i]); len(v) != 1 || len(v[0]) != n || strings.Trim(string(v[0]), "x") != "" {
			t.Fatalf("row of %d bytes: came back with %d", n, len(v[0]))
		}
		if v := textRow(t, rows[2*i+1]); len(v) != 1 || string(v[0]) != "small" {
			t.Fatalf("small row after %d bytes: %q", n, v)
		}
	}
	// The same in the binary protocol: a header byte and a NULL bitmap
	// byte more per row.
	stmt, err := c.Prepare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if r, err = stmt.Query(ctx); err != nil {
		t.Fatal(err)
	}
	rows, _ = readAll(t, r, 100)
	for i, n := range lens {
		v, _, ok := lenencBytes(rows[2*i][2:])
		if !ok || len(v) != n {
			t.Fatalf("binary row of %d bytes: came back with %d", n, len(v))
		}
	}
	if err := c.Exec(ctx, "SET @after = 1"); err != nil {
		t.Fatal(err)
	}
}

// TestErrorsWhileReading: a query that fails after sending rows ends its
// result with the server's error and leaves the connection usable; a
// context ending mid-read breaks it.
func TestErrorsWhileReading(t *testing.T) {
	srv := servertest.Need(t)
	c := dial(t, srv)
	ctx := context.Background()
	// The subquery returns two rows only for seq 1500: an error after the
	// rows before it were sent.
	r, err := c.Query(ctx, "SELECT t.seq, (SELECT s.seq FROM mysql.seq_1_to_2 s WHERE s.seq = 1 OR t.seq = 1500) FROM mysql.seq_1_to_3000 t")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	var se *ServerError
	for !r.Done() {
		_, n, err := r.ReadRows(ctx, nil, 4096)
		total += n
		if err != nil {
			if !errors.As(err, &se) || se.Code != 1242 {
				t.Fatalf("after %d rows: %v", total, err)
			}
		}
	}
	if se == nil || total == 0 || total >= 1500 || !c.Usable() {
		t.Fatalf("%d rows, error %v, usable %v", total, se, c.Usable())
	}
	if err := c.Exec(ctx, "SET @x = 2"); err != nil {
		t.Fatal(err)
	}

	r, err = c.Query(ctx, "SELECT seq, REPEAT('y', 100) FROM mysql.seq_1_to_1000000")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ReadRows(ctx, nil, 10000); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	if _, _, err := r.ReadRows(canceled, nil, 64<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled read: %v", err)
	}
	if c.Usable() {
		t.Fatal("the connection is usable after a canceled read")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the canceled read took %s", d)
	}
	if err := c.Exec(ctx, "SET @x = 3"); !errors.Is(err, ErrBroken) {
		t.Fatalf("a command on a broken connection: %v", err)
	}

	// Canceled while waiting for rows the server holds back (a batch read
	// waiting for more bytes): the read returns at once, not when they come.
	c = dial(t, srv)
	r, err = c.Query(ctx, "SELECT seq, IF(seq = 3, SLEEP(10), 0), REPEAT('x', 20000) FROM mysql.seq_1_to_4")
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := r.ReadRows(ctx, nil, 1); err != nil || n != 1 {
		t.Fatalf("the first row: %d rows, %v", n, err)
	}
	waiting, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start = time.Now()
	go func() {
		_, _, err := r.ReadRows(waiting, nil, 1<<20)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a read canceled while waiting: %v", err)
	}
	if d := time.Since(start); d > 9*time.Second {
		t.Fatalf("the canceled read took %s: it waited for the rows", d)
	}
}

func TestDialRefused(t *testing.T) {
	srv := servertest.Need(t)
	_, err := Dial(context.Background(), Options{Addr: srv.MySQL.Addr(), User: srv.MySQL.User, Password: "wrong" + srv.MySQL.Password})
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != 1045 {
		t.Fatalf("a wrong password: %v", err)
	}
	if _, err := Dial(context.Background(), Options{Addr: srv.MySQL.Addr(), User: srv.MySQL.User, Password: srv.MySQL.Password,
		Session: []string{"SET nonsense = 1"}}); err == nil || !strings.Contains(err.Error(), "SET nonsense = 1") {
		t.Fatalf("a failing session statement: %v", err)
	}
}
