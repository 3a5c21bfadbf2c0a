package binlog

import (
	"testing"

	"github.com/binlog2ch/binlog2ch/binlog/binlogtest"
)

// TestPayloadFields: the fields are length-encoded integers (go-mysql
// v1.16 reads them as one byte each, wrong from 251 on), in any order,
// unknown ones skipped.
func TestPayloadFields(t *testing.T) {
	b := binlogtest.PayloadFields(binlogtest.CompressZSTD, 70000, 3)
	b = append(b[:len(b)-1], 9, 2, 0xaa, 0xbb, 0) // an unknown field before the end mark
	f, err := parsePayloadFields(append(b, "xyz"...))
	if err != nil || f.size != 3 || f.uncompressed != 70000 || !f.hasUncompressed || f.compression != binlogtest.CompressZSTD || string(f.payload) != "xyz" {
		t.Errorf("got %+v, %v", f, err)
	}
	for _, v := range []uint64{0, 250, 251, 65535, 65536, 1<<24 - 1, 1 << 24, 1<<64 - 1} {
		if got, n := lengthEncodedInt(binlogtest.AppendLenEnc(nil, v)); got != v || n != len(binlogtest.AppendLenEnc(nil, v)) {
			t.Errorf("length-encoded %d read as %d (%d bytes)", v, got, n)
		}
	}
	f, err = parsePayloadFields(append(binlogtest.PayloadFields(binlogtest.CompressNone, 0, 300), make([]byte, 300)...))
	if err != nil || f.size != 300 || f.uncompressed != 300 || f.compression != binlogtest.CompressNone {
		t.Errorf("NONE: got %+v, %v", f, err)
	}
}
