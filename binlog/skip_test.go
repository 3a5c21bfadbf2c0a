package binlog

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
)

// skipEvents is a format description (with CRC32 checksums when crc), a
// table map of db.skipped and a rows event of it (an update's before and
// after images when update).
func skipEvents(crc, update bool, rows int) [][]byte {
	fde := binlogtest.FormatDescription()
	var images [][]byte
	for i := 0; i < rows; i++ {
		v := "value"
		if i%3 == 0 {
			v = "" // NULL
		}
		images = append(images, binlogtest.Image(int64(i), v, int32(-i)))
		if update {
			images = append(images, binlogtest.Image(int64(i), "after", int32(i)))
		}
	}
	typ := replication.WRITE_ROWS_EVENTv2
	if update {
		typ = replication.UPDATE_ROWS_EVENTv2
	}
	evs := [][]byte{
		binlogtest.Event(replication.FORMAT_DESCRIPTION_EVENT, 0, fde),
		binlogtest.Event(replication.TABLE_MAP_EVENT, 200, binlogtest.TableMap(42, "db", "skipped")),
		binlogtest.Event(typ, 300, binlogtest.Rows(42, binlogtest.StmtEnd, update, images...)),
	}
	if crc {
		checksummed(evs)
	}
	return evs
}

// checksummed turns events, a format description first, into events with
// CRC32 checksums: the format description's algorithm byte and its
// checksum (it ends in one already), then every other event's checksum
// over its bytes with the new size.
func checksummed(evs [][]byte) {
	fd := evs[0]
	fd[len(fd)-5] = byte(replication.BINLOG_CHECKSUM_ALG_CRC32)
	binary.LittleEndian.PutUint32(fd[len(fd)-4:], crc32.ChecksumIEEE(fd[:len(fd)-4]))
	for i, ev := range evs[1:] {
		i++
		binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)+4))
		evs[i] = binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
	}
}

// parseAll parses events with a parser whose decoder skips skips; it
// returns the last event and the format description.
func parseAll(t testing.TB, raw bool, skips *Skips, evs [][]byte) (*replication.BinlogEvent, *replication.FormatDescriptionEvent) {
	t.Helper()
	p := newParserWith(mysql.MySQLFlavor, NewRowsDecoder(raw, skips))
	var last *replication.BinlogEvent
	var fde *replication.FormatDescriptionEvent
	for _, b := range evs {
		ev, err := p.Parse(b)
		if err != nil {
			t.Fatalf("parse %v: %v", replication.EventType(b[4]), err)
		}
		if f, ok := ev.Event.(*replication.FormatDescriptionEvent); ok {
			fde = f
		}
		last = ev
	}
	return last, fde
}

// A skipped table's rows event keeps its header and rows bytes only; the
// stream's DecodeSkipped then gives what a decoder without skips gives,
// raw or decoded, with and without checksums, inserts and updates.
func TestSkippedRowsDecodedLater(t *testing.T) {
	for _, raw := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			for _, update := range []bool{false, true} {
				evs := skipEvents(crc, update, 5)
				want, _ := parseAll(t, raw, nil, evs)
				wantRows := want.Event.(*replication.RowsEvent).Rows
				if Skipped(want.Event.(*replication.RowsEvent)) || len(wantRows) == 0 {
					t.Fatalf("raw %v: not skipped, yet rows %v", raw, wantRows)
				}
				if _, isRaw := wantRows[0][0].(RawRows); isRaw != raw {
					t.Fatalf("raw %v: rows %T", raw, wantRows[0][0])
				}

				skips := NewSkips()
				skips.Set("db", "skipped", true)
				got, fde := parseAll(t, raw, skips, evs)
				markChecksum(got, fde)
				e := got.Event.(*replication.RowsEvent)
				if !Skipped(e) {
					t.Fatalf("raw %v crc %v update %v: rows decoded, %v", raw, crc, update, e.Rows)
				}
				if err := DecodeSkipped(got, raw); err != nil {
					t.Fatalf("raw %v crc %v update %v: %v", raw, crc, update, err)
				}
				if Skipped(e) || !reflect.DeepEqual(e.Rows, wantRows) {
					t.Fatalf("raw %v crc %v update %v: decoded later %#v, want %#v", raw, crc, update, e.Rows, wantRows)
				}
				if e.Table == nil || string(e.Table.Table) != "skipped" {
					t.Fatalf("table map %v", e.Table)
				}
			}
		}
	}
}

// The checksum's mark matters: unmarked, the 4 checksum bytes are read as
// rows (here they cannot be a row image of the table, so it fails).
func TestSkippedRowsChecksumMatters(t *testing.T) {
	skips := NewSkips()
	skips.Set("db", "skipped", true)
	got, _ := parseAll(t, false, skips, skipEvents(true, false, 2))
	if err := DecodeSkipped(got, false); err == nil {
		t.Fatalf("decoded with the checksum as rows: %v", got.Event.(*replication.RowsEvent).Rows)
	}
}

// Tables leave the set, and Clear empties it: their rows are decoded.
func TestSkipsSetAndClear(t *testing.T) {
	skips := NewSkips()
	skips.Set("db", "skipped", true)
	skips.Set("db", "other", true)
	skips.Set("db", "skipped", false)
	ev, _ := parseAll(t, true, skips, skipEvents(false, false, 1))
	if Skipped(ev.Event.(*replication.RowsEvent)) {
		t.Fatal("a table removed from the set was skipped")
	}
	skips.Set("db", "skipped", true)
	skips.Clear()
	if skips.has([]byte("db"), []byte("other")) || skips.has([]byte("db"), []byte("skipped")) {
		t.Fatal("Clear kept tables")
	}
	var none *Skips
	none.Set("db", "t", true)
	none.Clear()
	if none.has([]byte("db"), []byte("t")) {
		t.Fatal("a nil set holds a table")
	}
}

// BenchmarkSkippedRows is the decoder's work for a rows event of 100 rows
// of a skipped table, against decoding them (go-mysql's values, and raw).
func BenchmarkSkippedRows(b *testing.B) {
	evs := skipEvents(false, false, 100)
	body := evs[2][replication.EventHeaderSize:]
	for _, c := range []struct {
		name string
		raw  bool
		skip bool
	}{{"skipped", false, true}, {"decoded", false, false}, {"raw", true, false}} {
		b.Run(c.name, func(b *testing.B) {
			skips := NewSkips()
			skips.Set("db", "skipped", c.skip)
			dec := NewRowsDecoder(c.raw, skips)
			ev, _ := parseAll(b, c.raw, skips, evs)
			e := ev.Event.(*replication.RowsEvent)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := dec.Decode(e, body); err != nil {
					b.Fatal(err)
				}
			}
			if Skipped(e) != c.skip {
				b.Fatalf("skipped %v", Skipped(e))
			}
		})
	}
}
