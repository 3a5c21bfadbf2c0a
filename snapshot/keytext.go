package snapshot

import (
	"encoding/binary"
	"fmt"
	"strconv"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/mysqlproto"
	"github.com/binlog2ch/binlog2ch/mysqltime"
)

// keyText renders a key value of the binary protocol (v as
// mysqlproto.BinaryValues splits it) as the text a range bound holds: in
// the state file, and as the parameter keyArg makes of it. It is the text
// go-sql-driver gave for the same value (database/sql's RawBytes, which
// the key walk read before), so a copy resumes from a state file either
// wrote: integers in decimal, dates and times as MySQL prints them with
// the column's fraction digits, DECIMAL and strings as sent. A key is
// never NULL.
func keyText(c mysqlproto.Column, v []byte) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("NULL in a key")
	}
	unsigned := c.Flags&mysqlproto.UnsignedFlag != 0
	width := 0
	switch c.Type {
	case gomysql.MYSQL_TYPE_TINY:
		width = 1
	case gomysql.MYSQL_TYPE_SHORT, gomysql.MYSQL_TYPE_YEAR:
		width = 2
	case gomysql.MYSQL_TYPE_INT24, gomysql.MYSQL_TYPE_LONG:
		width = 4
	case gomysql.MYSQL_TYPE_LONGLONG:
		width = 8
	case gomysql.MYSQL_TYPE_DATE, gomysql.MYSQL_TYPE_NEWDATE, gomysql.MYSQL_TYPE_DATETIME, gomysql.MYSQL_TYPE_TIMESTAMP:
		return dateText(c, v)
	case gomysql.MYSQL_TYPE_TIME:
		return timeText(c, v)
	case gomysql.MYSQL_TYPE_FLOAT, gomysql.MYSQL_TYPE_DOUBLE, gomysql.MYSQL_TYPE_NULL:
		return nil, fmt.Errorf("MySQL type 0x%02x in a key", c.Type)
	default:
		return append([]byte{}, v...), nil // non-nil when empty: an empty key, not an open bound
	}
	if len(v) != width {
		return nil, fmt.Errorf("an integer of %d bytes, want %d", len(v), width)
	}
	var u uint64
	for i := width - 1; i >= 0; i-- {
		u = u<<8 | uint64(v[i])
	}
	if unsigned {
		return strconv.AppendUint(nil, u, 10), nil
	}
	shift := 64 - 8*width
	return strconv.AppendInt(nil, int64(u<<shift)>>shift, 10), nil
}

// fraction is the fraction digits MySQL prints for a column of decimals d
// (0x1f: none fixed).
func fraction(d byte) (int, error) {
	switch {
	case d == 0 || d == 0x1f:
		return 0, nil
	case d <= 6:
		return int(d), nil
	}
	return 0, fmt.Errorf("fraction digits %d", d)
}

func dateText(c mysqlproto.Column, v []byte) ([]byte, error) {
	var p mysqltime.Parts
	switch len(v) {
	case 11:
		p.US = int(binary.LittleEndian.Uint32(v[7:]))
		fallthrough
	case 7:
		p.H, p.Mi, p.S = int(v[4]), int(v[5]), int(v[6])
		fallthrough
	case 4:
		p.Y, p.Mo, p.D = int(binary.LittleEndian.Uint16(v)), int(v[2]), int(v[3])
	case 0:
	default:
		return nil, fmt.Errorf("a date of %d bytes", len(v))
	}
	if c.Type == gomysql.MYSQL_TYPE_DATE || c.Type == gomysql.MYSQL_TYPE_NEWDATE {
		return mysqltime.AppendParts(nil, p, 0)[:10], nil
	}
	fsp, err := fraction(c.Decimals)
	if err != nil {
		return nil, err
	}
	return mysqltime.AppendParts(nil, p, fsp), nil
}

func timeText(c mysqlproto.Column, v []byte) ([]byte, error) {
	fsp, err := fraction(c.Decimals)
	if err != nil {
		return nil, err
	}
	var us int64
	switch len(v) {
	case 12:
		us = int64(binary.LittleEndian.Uint32(v[8:]))
		fallthrough
	case 8:
		days := int64(binary.LittleEndian.Uint32(v[1:]))
		us += ((days*24+int64(v[5]))*3600 + int64(v[6])*60 + int64(v[7])) * 1e6
		if v[0] == 1 {
			us = -us
		}
	case 0:
	default:
		return nil, fmt.Errorf("a TIME of %d bytes", len(v))
	}
	return mysqltime.AppendTime(nil, us, fsp), nil
}
