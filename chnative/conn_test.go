package chnative

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// setup returns a connection, a clickhouse-go one to check with, and a
// fresh database.
func setup(t *testing.T) (*Conn, clickhouse.Conn, string) {
	t.Helper()
	srv := servertest.Need(t)
	ctx := context.Background()
	ch, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.ClickHouse.Addr()},
		Auth: clickhouse.Auth{Username: srv.ClickHouse.User, Password: srv.ClickHouse.Password}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	db := servertest.Name("b2c_native")
	if err := ch.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Exec(context.Background(), "DROP DATABASE "+db) })
	c, err := Dial(ctx, Options{Addr: []string{"127.0.0.1:1", srv.ClickHouse.Addr()}, User: srv.ClickHouse.User, Password: srv.ClickHouse.Password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ch, db
}

func TestHandshake(t *testing.T) {
	c, _, _ := setup(t)
	s := c.Server()
	if s.Name == "" || s.Major == 0 || s.Revision == 0 {
		t.Fatalf("server hello not parsed: %+v", s)
	}
	if c.revision != min(s.Revision, Revision) {
		t.Fatalf("revision %d, want min(%d, %d)", c.revision, s.Revision, Revision)
	}
	t.Logf("server %+v, speaking revision %d", s, c.revision)
}

func TestInsertAndReadBack(t *testing.T) {
	c, ch, db := setup(t)
	ctx := context.Background()
	if err := ch.Exec(ctx, "CREATE TABLE "+db+".t (id UInt64, s String, n Nullable(Int32), f FixedString(3), d Decimal(38, 2), a Array(String)) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	// Two inserts on one connection: the second proves the first left it
	// in a clean state. The second is big enough to span several frames.
	for round, rows := range []int{3, 300_000} {
		var header []Column
		err := c.Insert(ctx, "INSERT INTO "+db+".t (id, s, n, f, d, a)", func(cols []Column) error {
			header = cols
			return nil
		}, func(e *Encoder) error {
			e.StartBlock(6, rows)
			e.Column("id", "UInt64")
			for i := 0; i < rows; i++ {
				e.Uint64(uint64(round*1_000_000 + i))
			}
			e.Column("s", "String")
			for i := 0; i < rows; i++ {
				e.String(strings.Repeat("x", i%7))
			}
			e.Column("n", "Nullable(Int32)")
			for i := 0; i < rows; i++ {
				e.Uint8(uint8(i % 2)) // null map: odd rows are NULL
			}
			for i := 0; i < rows; i++ {
				e.Uint32(uint32(int32(-i)))
			}
			e.Column("f", "FixedString(3)")
			for i := 0; i < rows; i++ {
				e.Bytes([]byte{'a', 'b', byte('0' + i%10)})
			}
			e.Column("d", "Decimal(38, 2)")
			for i := 0; i < rows; i++ {
				// -i.05 and a value beyond 64 bits: 2^64 hundredths.
				if i == 1 {
					e.Uint128(0, 1)
				} else {
					v := -int64(i*100 + 5)
					e.Uint128(uint64(v), uint64(v>>63))
				}
			}
			e.Column("a", "Array(String)")
			for i := 0; i < rows; i++ {
				e.Uint64(uint64(i)) // offsets: row 0 empty, one element each after
			}
			for i := 0; i < rows; i++ {
				if i > 0 {
					e.String("e")
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(header) != 6 || header[0] != (Column{"id", "UInt64"}) || header[4] != (Column{"d", "Decimal(38, 2)"}) {
			t.Fatalf("header %v", header)
		}
	}
	var n, nulls uint64
	if err := ch.QueryRow(ctx, "SELECT count(), countIf(n IS NULL) FROM "+db+".t").Scan(&n, &nulls); err != nil {
		t.Fatal(err)
	}
	if n != 300_003 || nulls != 150_001 {
		t.Fatalf("count %d, nulls %d", n, nulls)
	}
	rows, err := ch.Query(ctx, "SELECT id, s, n, f, toString(d), length(a) FROM "+db+".t WHERE id < 3 ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id uint64
		var s, f, d string
		var nn *int32
		var l uint64
		if err := rows.Scan(&id, &s, &nn, &f, &d, &l); err != nil {
			t.Fatal(err)
		}
		ns := "NULL"
		if nn != nil {
			ns = fmt.Sprint(*nn)
		}
		got = append(got, fmt.Sprintf("%d %q %s %s %s %d", id, s, ns, f, d, l))
	}
	want := []string{`0 "" 0 ab0 -0.05 0`, `1 "x" NULL ab1 184467440737095516.16 1`, `2 "xx" -2 ab2 -2.05 1`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestInsertErrors(t *testing.T) {
	c, ch, db := setup(t)
	ctx := context.Background()
	noBody := func(*Encoder) error { t.Fatal("body called"); return nil }
	err := c.Insert(ctx, "INSERT INTO "+db+".missing (id)", func([]Column) error { return nil }, noBody)
	var ex *Exception
	if !errors.As(err, &ex) || ex.Code != 60 || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("want exception 60 naming the table, got %v", err)
	}
	// The connection survives a server exception.
	if err := ch.Exec(ctx, "CREATE TABLE "+db+".t (id UInt64) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	one := func(e *Encoder) error {
		e.StartBlock(1, 1)
		e.Column("id", "UInt64")
		e.Uint64(7)
		return nil
	}
	if err := c.Insert(ctx, "INSERT INTO "+db+".t (id)", func([]Column) error { return nil }, one); err != nil {
		t.Fatalf("insert after an exception: %v", err)
	}
	// A block the server rejects: a type that does not match the header.
	err = c.Insert(ctx, "INSERT INTO "+db+".t (id)", func([]Column) error { return nil }, func(e *Encoder) error {
		e.StartBlock(1, 1)
		e.Column("id", "String")
		e.String("x")
		return nil
	})
	if !errors.As(err, &ex) {
		t.Fatalf("want a server exception for a wrong column type, got %v", err)
	}
	c.Close()
	// A canceled context ends a call at once.
	c2, err := Dial(ctx, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	err = c2.Insert(cctx, "INSERT INTO "+db+".t (id)", func([]Column) error { return nil }, one)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("want context.Canceled at once, got %v after %s", err, time.Since(start))
	}
	// Wrong password: the server's exception, from Dial.
	bad := c.opts
	bad.Password = "wrong"
	if _, err := Dial(ctx, bad); !errors.As(err, &ex) {
		t.Fatalf("want an authentication exception, got %v", err)
	}
	var n uint64
	if err := ch.QueryRow(ctx, "SELECT count() FROM "+db+".t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
}
