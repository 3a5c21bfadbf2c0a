package binlogtest

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/replication"
)

// The events a stream passes by or stops on (source/passby.go): their
// layouts as MySQL's libbinlogevents reads them.

// AddFlagged is Add with the header's flags set (LOG_EVENT_IGNORABLE_F).
func (b *Binlog) AddFlagged(typ replication.EventType, flags uint16, body []byte) (start, end uint32) {
	start, end = b.Add(typ, body)
	binary.LittleEndian.PutUint16(b.events[len(b.events)-1].data[17:], flags)
	return start, end
}

// IntVar is an INTVAR_EVENT's body: INSERT_ID (2) = v.
func IntVar(v uint64) []byte { return binary.LittleEndian.AppendUint64([]byte{2}, v) }

// RowsQuery is a ROWS_QUERY_LOG_EVENT's body: a length byte (which
// readers skip), the statement.
func RowsQuery(q string) []byte { return append([]byte{byte(min(len(q), 255))}, q...) }

// BeginLoadQuery is a BEGIN_LOAD_QUERY_EVENT's (and an
// APPEND_BLOCK_EVENT's) body: the file id, a block of the file.
func BeginLoadQuery(fileID uint32, block string) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, fileID), block...)
}

// ExecuteLoadQuery is an EXECUTE_LOAD_QUERY_EVENT's body: a query event's
// post-header (thread id, exec time, db length, error code, status
// variables' length), its own (file id, the file name's start and end in
// the statement, duplicate handling), status variables (Q_FLAGS2 and
// Q_SQL_MODE), the db and a NUL, the statement; the file name is the
// first quoted string of q.
func ExecuteLoadQuery(fileID uint32, db, q string) []byte {
	status := append([]byte{0}, 0, 0, 0, 0)
	status = append(status, 1, 0, 0, 0, 0, 0, 0, 0, 0)
	b := make([]byte, 8, 26+len(status)+len(db)+1+len(q))
	b = append(b, byte(len(db)), 0, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(status)))
	b = binary.LittleEndian.AppendUint32(b, fileID)
	fnStart, fnEnd := 0, 0
	for i := 0; i < len(q); i++ {
		if q[i] == '\'' {
			if fnStart == 0 {
				fnStart = i
			} else {
				fnEnd = i + 1
				break
			}
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(fnStart))
	b = binary.LittleEndian.AppendUint32(b, uint32(fnEnd))
	b = append(b, 0) // LOAD_DUP_ERROR
	b = append(append(append(b, status...), db...), 0)
	return append(b, q...)
}

// Incident is an INCIDENT_EVENT's body: the incident's number (1,
// LOST_EVENTS), the message after its length byte.
func Incident(n uint16, msg string) []byte {
	b := binary.LittleEndian.AppendUint16(nil, n)
	return append(append(b, byte(len(msg))), msg...)
}
