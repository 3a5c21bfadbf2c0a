package chnative

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// TestStream sends several blocks as one INSERT into the real server: it
// stores them as one part when they stay under the squashing minimums the
// connection sends, and as a part each when those are small; an aborted
// stream whose blocks the server held stores none of them, and Resume on
// another connection stores them all, once, with a block more.
func TestStream(t *testing.T) {
	_, ch, db := setup(t)
	srv := servertest.Need(t)
	ctx := context.Background()
	dialWith := func(minRows uint64, method Compression) *Conn {
		c, err := Dial(ctx, Options{Addr: []string{srv.ClickHouse.Addr()}, User: srv.ClickHouse.User, Password: srv.ClickHouse.Password, Compression: method,
			Settings: func(Server) []Setting {
				return []Setting{{Name: "min_insert_block_size_rows", Value: minRows}, {Name: "min_insert_block_size_bytes", Value: 1 << 30}}
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial := func(minRows uint64) *Conn { return dialWith(minRows, CompressionLZ4) }
	const rows = 100_000
	block := func(b int) func(*Encoder) error {
		return func(e *Encoder) error {
			e.StartBlock(1, rows)
			e.Column("id", "UInt64")
			for i := 0; i < rows; i++ {
				// Not compressible: the blocks' bytes are in the server's
				// memory, not a few frames of them.
				x := uint64(b*rows+i) + 1
				e.Uint64(x ^ x*0x9E3779B97F4A7C15<<20)
			}
			return nil
		}
	}
	sum := func(blocks ...int) (s uint64) {
		for _, b := range blocks {
			for i := 0; i < rows; i++ {
				x := uint64(b*rows+i) + 1
				s += x ^ x*0x9E3779B97F4A7C15<<20
			}
		}
		return s
	}
	stream := func(c *Conn, table string, blocks ...int) *Stream {
		s, err := c.Begin(ctx, "INSERT INTO "+db+"."+table+" (id)", func([]Column) error { return nil }, &Recording{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if err := s.Block(ctx, block(b)); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	check := func(table string, wantParts, wantRows int, wantSum uint64) {
		t.Helper()
		var parts, n, s uint64
		if err := ch.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM system.parts WHERE database = '%s' AND table = '%s' AND active", db, table)).Scan(&parts); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueryRow(ctx, fmt.Sprintf("SELECT count(), sum(id) FROM %s.%s", db, table)).Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		if int(parts) != wantParts || int(n) != wantRows || s != wantSum {
			t.Fatalf("%s: %d parts, %d rows, sum %d; want %d, %d, %d", table, parts, n, s, wantParts, wantRows, wantSum)
		}
	}
	for _, table := range []string{"one", "each", "lost", "plain"} {
		if err := ch.Exec(ctx, "CREATE TABLE "+db+"."+table+" (id UInt64) ENGINE = MergeTree ORDER BY id SETTINGS parts_to_delay_insert = 1000"); err != nil {
			t.Fatal(err)
		}
		if err := ch.Exec(ctx, "SYSTEM STOP MERGES "+db+"."+table); err != nil {
			t.Fatal(err)
		}
	}

	if err := stream(dial(1_000_000), "one", 0, 1, 2).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check("one", 1, 3*rows, sum(0, 1, 2))
	if err := stream(dial(rows/2), "each", 0, 1, 2).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check("each", 3, 3*rows, sum(0, 1, 2))

	c := dial(1_000_000)
	s := stream(c, "lost", 3, 4)
	// Until the server holds both blocks (its memory for the query grows
	// by their 1.6 MB), closing the connection would prove nothing.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var mem int64
		err := ch.QueryRow(ctx, "SELECT toInt64(memory_usage) FROM system.processes WHERE query_id = ?", c.queryID).Scan(&mem)
		if err == nil && mem >= 2*rows*8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never held the stream's blocks (memory_usage %d, %v)", mem, err)
		}
	}
	s.Abort()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var n uint64
		if err := ch.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id = ?", c.queryID).Scan(&n); err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lost stream's query never ended")
		}
	}
	check("lost", 0, 0, 0)
	if s.Recorded() < 2*rows*8 {
		t.Fatalf("recorded %d bytes of two 800 KB blocks", s.Recorded())
	}
	// The header is checked again, and a refused one keeps the recording.
	refused := fmt.Errorf("refused")
	if _, err := dial(1_000_000).Resume(ctx, s, func([]Column) error { return refused }); err != refused {
		t.Fatalf("Resume with the header refused: %v", err)
	}
	r, err := dial(1_000_000).Resume(ctx, s, func([]Column) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Block(ctx, block(5)); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check("lost", 1, 3*rows, sum(3, 4, 5))

	// A stream recorded in plain Native (auto, to a server on this host)
	// resumed on a connection that compresses (auto, to another of the
	// servers): the recording goes again as it was recorded.
	p := stream(dialWith(1_000_000, CompressionNone), "plain", 6)
	p.Abort()
	lz := dial(1_000_000)
	r, err = lz.Resume(ctx, p, func([]Column) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if lz.Compression() != CompressionNone {
		t.Fatalf("the resuming connection compresses with %s, the recording's frames none", lz.Compression())
	}
	if err := r.Block(ctx, block(7)); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check("plain", 1, 2*rows, sum(6, 7))
}

// TestRecording records writes of every size across chunks, drops a
// failed block's bytes, and reuses its chunks after Reset.
func TestRecording(t *testing.T) {
	var r Recording
	defer r.Release()
	var want bytes.Buffer
	write := func(n int, b byte) {
		p := bytes.Repeat([]byte{b}, n)
		if k, err := r.Write(p); err != nil || k != n {
			t.Fatalf("Write(%d): %d, %v", n, k, err)
		}
		want.Write(p)
	}
	check := func() {
		t.Helper()
		var got bytes.Buffer
		if err := r.writeTo(&got); err != nil {
			t.Fatal(err)
		}
		if r.Len() != want.Len() || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("recorded %d bytes (Len %d), want %d, equal %v", got.Len(), r.Len(), want.Len(), bytes.Equal(got.Bytes(), want.Bytes()))
		}
	}
	for i, n := range []int{1, recordChunk - 1, 2, 3 * recordChunk / 2, 7, recordChunk} {
		write(n, byte(i+1))
	}
	check()
	mark := r.Len()
	write(recordChunk+5, 9)
	r.truncate(mark)
	want.Truncate(mark)
	check()
	chunks := len(r.chunks) + len(r.pool().chunks)
	r.Reset()
	want.Reset()
	check()
	write(2*recordChunk, 10)
	check()
	if n := len(r.chunks) + len(r.pool().chunks); n != chunks {
		t.Fatalf("%d chunks after Reset and a write, %d before: not reused", n, chunks)
	}
	o := &Recording{spares: r.pool()} // as Recordings pairs them
	r.Reset()
	if _, err := o.Write(bytes.Repeat([]byte{11}, 2*recordChunk)); err != nil {
		t.Fatal(err)
	}
	if n := len(r.chunks) + len(o.chunks) + len(r.pool().chunks); n != chunks {
		t.Fatalf("%d chunks in two recordings sharing spares, %d in one", n, chunks)
	}
	o.Release()
	r.Release()
}

// TestRecordingsInTurn: Other never hands out the busy recording, and the
// two fill from the chunks either gave back.
func TestRecordingsInTurn(t *testing.T) {
	var rs Recordings
	defer rs.Release()
	a := rs.Other(nil)
	if _, err := a.Write(bytes.Repeat([]byte{1}, 3*recordChunk)); err != nil {
		t.Fatal(err)
	}
	b := rs.Other(a)
	if b == a {
		t.Fatal("the busy recording handed out")
	}
	if _, err := b.Write(bytes.Repeat([]byte{2}, recordChunk)); err != nil {
		t.Fatal(err)
	}
	// a's stream ended: a is handed out again, b being busy, and its
	// chunks go back to be shared.
	if rs.Other(b) != a || a.Len() != 0 {
		t.Fatal("the free recording not handed out reset")
	}
	if _, err := b.Write(bytes.Repeat([]byte{3}, 2*recordChunk)); err != nil {
		t.Fatal(err)
	}
	if held := len(a.chunks) + len(b.chunks) + len(rs.spares.chunks); held != 4 {
		t.Fatalf("%d chunks for at most 4 MiB recorded at once", held)
	}
}
