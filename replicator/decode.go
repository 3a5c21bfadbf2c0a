package replicator

import (
	"sync"

	"github.com/go-mysql-org/go-mysql/replication"
)

// rowsDecoder decodes rows events like go-mysql does, minus its per-row
// UnsignedMap: go-mysql builds a fresh map of the table's signedness for
// every row image, which cost a fifth of the daemon's CPU. Decoded without
// signedness, UNSIGNED values arrive as signed Go integers of the column's
// width, and the schema converters reinterpret them (schema.intValue).
type rowsDecoder struct {
	mu sync.Mutex // the parser may decode transaction payloads concurrently
	// byTable holds, per table id, the last table map seen and its copy
	// without signedness.
	byTable map[uint64][2]*replication.TableMapEvent
}

func newRowsDecoder() *rowsDecoder {
	return &rowsDecoder{byTable: map[uint64][2]*replication.TableMapEvent{}}
}

func (d *rowsDecoder) decode(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	orig := e.Table
	if orig != nil && len(orig.SignednessBitmap) > 0 {
		e.Table = d.unsigned(orig)
		// The reader reads the real table map (names, signedness) from the
		// event after decoding.
		defer func() { e.Table = orig }()
	}
	return e.DecodeData(pos, data)
}

// unsigned returns a copy of t without signedness, cached per table id.
func (d *rowsDecoder) unsigned(t *replication.TableMapEvent) *replication.TableMapEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	if pair, ok := d.byTable[t.TableID]; ok && pair[0] == t {
		return pair[1]
	}
	c := *t
	c.SignednessBitmap = nil
	if len(d.byTable) > 10000 {
		clear(d.byTable) // many tables or ids churned by DDL: start over
	}
	d.byTable[t.TableID] = [2]*replication.TableMapEvent{t, &c}
	return &c
}
