// Package jsondifftest builds MySQL's binary JSON and JSON diff vectors
// byte by byte, as MySQL writes them (binary JSON in
// sql-common/json_binary.cc, Json_diff_vector in sql/json_diff.cc), for
// tests of code that reads them. It is for tests only and must not be
// imported by the daemon.
package jsondifftest

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlog2ch/binlog2ch/jsondiff"
)

// Diffs is a diff vector.
type Diffs []Diff

// Obj is a JSON object for the binary JSON encoder, its members in any
// order (the encoder sorts them as MySQL does).
// Its members are unnamed structs so that tests write them as {"k", v}.
type Obj []struct {
	K string
	V any
}

// Opaque is a MySQL value of another type in a JSON document.
type Opaque struct {
	Type byte
	Data []byte
}

// Binary is v in MySQL's binary JSON format. Values: nil (JSON null), bool,
// int (INT16, INT32 or INT64 as MySQL picks), uint64 (UINT64), float64
// (DOUBLE), string, Opaque, Obj, []any.
func Binary(v any) []byte {
	t, p := encode(v)
	return append([]byte{t}, p...)
}

func encode(v any) (byte, []byte) {
	switch x := v.(type) {
	case nil:
		return replication.JSONB_LITERAL, []byte{replication.JSONB_NULL_LITERAL}
	case bool:
		if x {
			return replication.JSONB_LITERAL, []byte{replication.JSONB_TRUE_LITERAL}
		}
		return replication.JSONB_LITERAL, []byte{replication.JSONB_FALSE_LITERAL}
	case int:
		switch {
		case x >= math.MinInt16 && x <= math.MaxInt16:
			return replication.JSONB_INT16, binary.LittleEndian.AppendUint16(nil, uint16(x))
		case x >= math.MinInt32 && x <= math.MaxInt32:
			return replication.JSONB_INT32, binary.LittleEndian.AppendUint32(nil, uint32(x))
		}
		return replication.JSONB_INT64, binary.LittleEndian.AppendUint64(nil, uint64(x))
	case uint64:
		return replication.JSONB_UINT64, binary.LittleEndian.AppendUint64(nil, x)
	case float64:
		return replication.JSONB_DOUBLE, binary.LittleEndian.AppendUint64(nil, math.Float64bits(x))
	case string:
		return replication.JSONB_STRING, str(x)
	case Opaque:
		return replication.JSONB_OPAQUE, append([]byte{x.Type}, append(VarLen(len(x.Data)), x.Data...)...)
	case Obj:
		o := append(Obj(nil), x...)
		// MySQL's key order: by length, then bytes.
		sort.Slice(o, func(i, j int) bool {
			if len(o[i].K) != len(o[j].K) {
				return len(o[i].K) < len(o[j].K)
			}
			return o[i].K < o[j].K
		})
		keys, vals := make([]string, len(o)), make([]any, len(o))
		for i, m := range o {
			keys[i], vals[i] = m.K, m.V
		}
		return replication.JSONB_SMALL_OBJECT, container(keys, vals)
	case []any:
		return replication.JSONB_SMALL_ARRAY, container(nil, x)
	}
	panic("encode: unsupported value")
}

func VarLen(n int) []byte {
	var b []byte
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

func str(s string) []byte { return append(VarLen(len(s)), s...) }

// container is a small object (keys != nil) or array: element count and
// size (2 bytes each), key entries (offset, length), value entries (type,
// then the value itself when it fits in 2 bytes, else its offset), keys,
// values; offsets from the count.
func container(keys []string, vals []any) []byte {
	n := len(vals)
	header := 4 + 3*n
	if keys != nil {
		header += 4 * n
	}
	var keyEntries, valueEntries, keyBytes, valueBytes []byte
	off := header
	for _, k := range keys {
		keyEntries = binary.LittleEndian.AppendUint16(keyEntries, uint16(off))
		keyEntries = binary.LittleEndian.AppendUint16(keyEntries, uint16(len(k)))
		keyBytes = append(keyBytes, k...)
		off += len(k)
	}
	for _, v := range vals {
		t, p := encode(v)
		valueEntries = append(valueEntries, t)
		switch t {
		case replication.JSONB_LITERAL:
			valueEntries = append(valueEntries, p[0], 0)
		case replication.JSONB_INT16, replication.JSONB_UINT16:
			valueEntries = append(valueEntries, p...)
		default:
			valueEntries = binary.LittleEndian.AppendUint16(valueEntries, uint16(off))
			valueBytes = append(valueBytes, p...)
			off += len(p)
		}
	}
	b := binary.LittleEndian.AppendUint16(nil, uint16(n))
	b = binary.LittleEndian.AppendUint16(b, uint16(off))
	return append(append(append(append(b, keyEntries...), valueEntries...), keyBytes...), valueBytes...)
}

// Diff is a diff; raw, when set, is the value's bytes instead of v's.
type Diff struct {
	Op   jsondiff.Op
	Path string
	V    any
	Raw  []byte
}

func LenEnc(n int) []byte {
	if n < 251 {
		return []byte{byte(n)}
	}
	return append([]byte{252}, byte(n), byte(n>>8))
}

func (ds Diffs) Vector() []byte {
	var b []byte
	for _, d := range ds {
		b = append(append(append(b, byte(d.Op)), LenEnc(len(d.Path))...), d.Path...)
		if d.Op != jsondiff.Remove {
			v := d.Raw
			if v == nil {
				v = Binary(d.V)
			}
			b = append(append(b, LenEnc(len(v))...), v...)
		}
	}
	return b
}
