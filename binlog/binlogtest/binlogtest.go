// Package binlogtest builds binlogs byte by byte as MySQL 8.0 writes them
// (the events' layouts: MySQL's libbinlogevents; the payload event's
// fields: binary_log::codecs::binary::Transaction_payload) and serves them
// over an in-memory connection as MySQL 8.0 answers COM_BINLOG_DUMP and
// COM_BINLOG_DUMP_GTID, refusals included (server.go), for tests of the
// binlog reader and the stream: MySQL cannot run on the development
// machine. It shares no code with the reader it tests, and
// must not be imported outside tests.
package binlogtest

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
)

// Compression types of a TRANSACTION_PAYLOAD_EVENT, and its fields' types.
const (
	CompressZSTD = 0
	CompressNone = 255

	payloadEndMark          = 0
	payloadSizeField        = 1
	payloadCompressionField = 2
	payloadUncompressedSize = 3
)

const File = "binlog.000003"

// mysql80PostHeader is MySQL 8.0's post-header length of each event type,
// 1 to 41, as its format description event lists them.
var mysql80PostHeader = []byte{56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 92, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10, 25, 25, 0, 18, 52, 0, 10, 40, 0}

func Event(typ replication.EventType, logPos uint32, body []byte) []byte {
	ev := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+len(body))
	binary.LittleEndian.PutUint32(ev[0:], 1700000000)
	ev[4] = byte(typ)
	binary.LittleEndian.PutUint32(ev[5:], 1) // server id
	binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)+len(body)))
	binary.LittleEndian.PutUint32(ev[13:], logPos)
	return append(ev, body...)
}

func AppendLenEnc(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return binary.LittleEndian.AppendUint16(append(b, 0xfc), uint16(v))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xfe), v)
}

func FormatDescription() []byte {
	b := binary.LittleEndian.AppendUint16(nil, 4)
	var version [50]byte
	copy(version[:], "8.0.36")
	b = append(b, version[:]...)
	b = append(b, 0, 0, 0, 0, replication.EventHeaderSize)
	b = append(b, mysql80PostHeader...)
	return append(b, 0, 0, 0, 0, 0) // checksum algorithm OFF, checksum
}

func Rotate(pos uint32, file string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, uint64(pos)), file...)
}

// GTID is a GTID event's: flags, source uuid, gno, logical clock.
func GTID(gno uint64) []byte {
	b := append([]byte{1}, bytes.Repeat([]byte{0x3e}, 16)...)
	b = binary.LittleEndian.AppendUint64(b, gno)
	b = append(b, 2)
	b = binary.LittleEndian.AppendUint64(b, gno-1)
	return binary.LittleEndian.AppendUint64(b, gno)
}

func Query(db, q string) []byte {
	b := make([]byte, 13) // thread id, exec time, db length, error code, status vars length
	b[8] = byte(len(db))
	b = append(append(b, db...), 0)
	return append(b, q...)
}

// TableMap maps id to db.tbl (id BIGINT NOT NULL, v VARCHAR(255)
// utf8mb4 NULL, n INT, PRIMARY KEY (id)) with binlog_row_metadata=FULL.
func TableMap(id uint64, db, tbl string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, id)[:6]
	b = append(b, 1, 0) // flags
	b = append(append(append(b, byte(len(db))), db...), 0)
	b = append(append(append(b, byte(len(tbl))), tbl...), 0)
	b = append(b, 3, mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_LONG)
	b = append(b, 2, 0xfc, 0x03) // metadata: VARCHAR of 1020 bytes
	b = append(b, 0b110)         // v and n nullable
	b = append(b, 1, 1, 0)       // signedness: both signed
	b = append(b, 2, 1, 255)     // default charset: utf8mb4_0900_ai_ci
	names := []byte{}
	for _, n := range []string{"id", "v", "n"} {
		names = append(append(names, byte(len(n))), n...)
	}
	b = append(append(b, 4, byte(len(names))), names...)
	return append(b, 8, 1, 0) // simple primary key: column 0
}

// Image is a full row Image of the test table; v "" is NULL.
func Image(id int64, v string, n int32) []byte {
	if v == "" {
		b := binary.LittleEndian.AppendUint64([]byte{0b010}, uint64(id))
		return binary.LittleEndian.AppendUint32(b, uint32(n))
	}
	b := binary.LittleEndian.AppendUint64([]byte{0}, uint64(id))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// SplitImages splits the test table's row images.
func SplitImages(raw []byte) (rows [][]any) {
	for len(raw) > 0 {
		id := int64(binary.LittleEndian.Uint64(raw[1:]))
		p := 9
		var v any
		if raw[0]&0b010 == 0 {
			l := int(binary.LittleEndian.Uint16(raw[p:]))
			v, p = string(raw[p+2:p+2+l]), p+2+l
		}
		rows = append(rows, []any{id, v, int32(binary.LittleEndian.Uint32(raw[p:]))})
		raw = raw[p+4:]
	}
	return rows
}

const StmtEnd = 1 // rows event flag: the statement's last

func Rows(tableID uint64, flags uint16, update bool, images ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, tableID)[:6]
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = append(b, 2, 0, 3, 0b111) // no extra data; 3 columns, all present
	if update {
		b = append(b, 0b111)
	}
	for _, im := range images {
		b = append(b, im...)
	}
	return b
}

func XID(xid uint64) []byte { return binary.LittleEndian.AppendUint64(nil, xid) }

func XAPrepare(gtrid string) []byte {
	b := []byte{0}
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(gtrid)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	return append(b, gtrid...)
}

// Inner is an event inside a payload: log_pos 0.
func Inner(typ replication.EventType, body []byte) []byte { return Event(typ, 0, body) }

// PayloadFields encodes a payload event's fields as MySQL does:
// compression type, uncompressed size (not for NONE), payload size, end.
func PayloadFields(compression, uncompressed uint64, size int) []byte {
	field := func(b []byte, typ, v uint64) []byte {
		return AppendLenEnc(AppendLenEnc(AppendLenEnc(b, typ), uint64(len(AppendLenEnc(nil, v)))), v)
	}
	b := field(nil, payloadCompressionField, compression)
	if compression != CompressNone {
		b = field(b, payloadUncompressedSize, uncompressed)
	}
	return append(field(b, payloadSizeField, uint64(size)), payloadEndMark)
}

// Payload is a TRANSACTION_PAYLOAD_EVENT's body holding events.
func Payload(t testing.TB, compression uint64, events ...[]byte) []byte {
	raw := bytes.Join(events, nil)
	data := raw
	if compression == CompressZSTD {
		data = Zstd(t, raw)
	}
	return append(PayloadFields(compression, uint64(len(raw)), len(data)), data...)
}

func Zstd(t testing.TB, raw []byte) []byte {
	var buf bytes.Buffer
	w := ZstdWriter(t, &buf)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ZstdWriter compresses as MySQL does at its default level 3: a 2 MiB
// window, the content size unknown.
func ZstdWriter(t testing.TB, w io.Writer) *zstd.Encoder {
	enc, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(2<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// Binlog is one binlog file as a server holds it.
type Binlog struct {
	file   string
	pos    uint32
	events []fakeEvent
	purged *mysql.MysqlGTIDSet // gtid_purged: SetPurged

	mu    sync.Mutex
	dumps []Dump
	sent  int // the events the dumps wrote, the client having read them
}

type fakeEvent struct {
	start uint32
	data  []byte
}

func NewBinlog() *Binlog {
	b := &Binlog{file: File, pos: 4}
	b.Add(replication.FORMAT_DESCRIPTION_EVENT, FormatDescription())
	return b
}

// Events is how many events the binlog holds, its format description
// included; a dump from its start sends them and a rotate before.
func (b *Binlog) Events() int { return len(b.events) }

// Add appends an event and returns where it starts and ends.
func (b *Binlog) Add(typ replication.EventType, body []byte) (start, end uint32) {
	start, end = b.pos, b.pos+replication.EventHeaderSize+uint32(len(body))
	b.events = append(b.events, fakeEvent{start, Event(typ, end, body)})
	b.pos = end
	return start, end
}

// MariaDBTableMap is the table map MariaDB 10.11 wrote (binlog_row_metadata=FULL)
// for CREATE TABLE d.t (a INT UNSIGNED NOT NULL, b VARCHAR(5) NOT NULL,
// c BINARY(4), e ENUM('x','y'), dd DECIMAL(10,3), PRIMARY KEY (b, a)),
// plus a DATETIME(3) and a BLOB column.
func MariaDBTableMap() *replication.TableMapEvent {
	return &replication.TableMapEvent{
		TableID: 18, Schema: []byte("d"), Table: []byte("t"), ColumnCount: 7,
		ColumnType:       []byte{3, 15, 254, 254, 246, 18, 252},
		ColumnMeta:       []uint16{0, 20, 65028, 63233, 2563, 3, 2},
		NullBitmap:       []byte{0b1111100},
		SignednessBitmap: []byte{0b10000000},
		ColumnName:       [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("e"), []byte("dd"), []byte("dt"), []byte("bl")},
		ColumnCharset:    []uint64{45, 63, 63},
		EnumStrValue:     [][][]byte{{[]byte("x"), []byte("y")}},
		PrimaryKey:       []uint64{1, 0},
	}
}

// End is where the next event added will start.
func (b *Binlog) End() uint32 { return b.pos }

// EventStart and EventEnd are where the i-th event (the format
// description is the first) starts and ends.
func (b *Binlog) EventStart(i int) uint32 { return b.events[i].start }

func (b *Binlog) EventEnd(i int) uint32 { return b.events[i].start + uint32(len(b.events[i].data)) }
