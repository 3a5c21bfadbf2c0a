package block

import (
	"encoding/binary"
	"strconv"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/mysqltime"
)

// The binary result-set protocol's value layouts (Protocol::BinaryResultsetRow)
// that result.go's converters read: integers, length-encoded strings, dates
// and times.

// wireIntWidth is the bytes of a binary-protocol integer of type typ (0:
// not an integer type).
func wireIntWidth(typ byte) int {
	switch typ {
	case mysql.MYSQL_TYPE_TINY:
		return 1
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
		return 2
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG:
		return 4
	case mysql.MYSQL_TYPE_LONGLONG:
		return 8
	}
	return 0
}

// lenenc reads a length-encoded string's header: the value starts at
// p[start:] and ends at end.
func lenenc(p []byte) (start, end int, err error) {
	if len(p) == 0 {
		return 0, 0, errShort
	}
	var n uint64
	switch b := p[0]; {
	case b < 0xfb:
		n, start = uint64(b), 1
	case b == 0xfc && len(p) >= 3:
		n, start = uint64(binary.LittleEndian.Uint16(p[1:])), 3
	case b == 0xfd && len(p) >= 4:
		n, start = uint64(p[1])|uint64(p[2])<<8|uint64(p[3])<<16, 4
	case b == 0xfe && len(p) >= 9:
		n, start = binary.LittleEndian.Uint64(p[1:]), 9
	default:
		return 0, 0, errShort
	}
	if uint64(len(p)-start) < n {
		return 0, 0, errShort
	}
	return start, start + int(n), nil
}

// wireTemporal reads a binary-protocol DATE, DATETIME or TIMESTAMP: a
// length (0, 4, 7 or 11) and that many bytes of year, month, day, hour,
// minute, second and microseconds. Zero values come with length 0.
func wireTemporal(p []byte) (mysqltime.Parts, int, error) {
	var t mysqltime.Parts
	if len(p) == 0 {
		return t, 0, errShort
	}
	n := int(p[0])
	if len(p) < 1+n {
		return t, 0, errShort
	}
	v := p[1 : 1+n]
	switch n {
	case 11:
		t.US = int(binary.LittleEndian.Uint32(v[7:]))
		fallthrough
	case 7:
		t.H, t.Mi, t.S = int(v[4]), int(v[5]), int(v[6])
		fallthrough
	case 4:
		t.Y, t.Mo, t.D = int(binary.LittleEndian.Uint16(v)), int(v[2]), int(v[3])
	case 0:
	default:
		return t, 0, errMsg("a date or time of " + strconv.Itoa(n) + " bytes")
	}
	if t.US > 999999 {
		return t, 0, errMsg("microseconds beyond 999999")
	}
	return t, 1 + n, nil
}

// wireTime reads a binary-protocol TIME into signed microseconds: a length
// (0, 8 or 12), then sign, days, hours, minutes, seconds, microseconds.
func wireTime(p []byte) (int64, int, error) {
	if len(p) == 0 {
		return 0, 0, errShort
	}
	n := int(p[0])
	if len(p) < 1+n {
		return 0, 0, errShort
	}
	if n == 0 {
		return 0, 1, nil
	}
	if n != 8 && n != 12 {
		return 0, 0, errMsg("a TIME of " + strconv.Itoa(n) + " bytes")
	}
	v := p[1 : 1+n]
	days := int64(binary.LittleEndian.Uint32(v[1:]))
	us := ((days*24+int64(v[5]))*3600 + int64(v[6])*60 + int64(v[7])) * 1e6
	if n == 12 {
		f := int64(binary.LittleEndian.Uint32(v[8:]))
		if f > 999999 {
			return 0, 0, errMsg("microseconds beyond 999999")
		}
		us += f
	}
	if v[0] == 1 {
		us = -us
	}
	return us, 1 + n, nil
}

// bytesString views p as a string for parsing, without a copy; the string
// must not outlive p.
func bytesString(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	return unsafe.String(&p[0], len(p))
}
