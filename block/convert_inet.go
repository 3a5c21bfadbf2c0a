package block

import (
	"fmt"
	"strconv"

	"github.com/binlog2ch/binlog2ch/schema"
)

// MariaDB's UUID, INET4 and INET6 arrive as their bytes on every path: the
// binlog carries a UUID in the order of its text (sql_type_uuid.h's pack
// undoes the record's swap for index order), an INET4 or INET6 in network
// order, all with trailing zero bytes dropped as BINARY's are; a table copy
// reads them CAST AS BINARY (SelectExpr). Each is kept as MariaDB prints
// it, so a String column holds MariaDB's text and the UUID, IPv4 and IPv6
// columns' Native encoding (package column) parses it back.

// fixedBinText appends the text of a UUID, INET4 or INET6 value v (its
// bytes, trailing zeros possibly dropped) to dst.
func fixedBinText(dst []byte, kind schema.MySQLKind, v []byte) ([]byte, error) {
	var b [16]byte
	width := 16
	if kind == schema.KindInet4 {
		width = 4
	}
	if len(v) > width {
		return dst, errMsg(fmt.Sprintf("%d bytes, longer than %s's %d", len(v), kindName(kind), width))
	}
	copy(b[:], v)
	switch kind {
	case schema.KindUUID:
		return appendUUID(dst, &b), nil
	case schema.KindInet4:
		return appendInet4(dst, b[:4]), nil
	}
	return appendInet6(dst, &b), nil
}

func kindName(k schema.MySQLKind) string {
	switch k {
	case schema.KindUUID:
		return "UUID"
	case schema.KindInet4:
		return "INET4"
	}
	return "INET6"
}

// isFixedBin reports whether a column is one of MariaDB's UUID, INET4 and
// INET6.
func isFixedBin(c *schema.Column) bool {
	return c.Kind == schema.KindUUID || c.Kind == schema.KindInet4 || c.Kind == schema.KindInet6
}

const hexDigits = "0123456789abcdef"

// appendUUID is my_uuid2str's text: lower-case, hyphens after bytes 4, 6,
// 8 and 10.
func appendUUID(dst []byte, b *[16]byte) []byte {
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[x>>4], hexDigits[x&15])
	}
	return dst
}

// appendInet4 is Inet4::to_string's text, a.b.c.d.
func appendInet4(dst []byte, b []byte) []byte {
	for i := 0; i < 4; i++ {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = strconv.AppendUint(dst, uint64(b[i]), 10)
	}
	return dst
}

// appendInet6 is Inet6::to_string's text (plugin/type_inet/sql_type_inet.cc),
// which is not RFC 5952's: the longest run of zero words becomes "::" even
// when it is one word long (the first of equal runs), and an address whose
// first six words are zero (IPv4-compatible) or five zero and ffff
// (IPv4-mapped) ends in the dotted IPv4 text, ::1.2.3.4 and ::ffff:1.2.3.4
// (but ::1 and :: stay as they are: their zero run is longer).
func appendInet6(dst []byte, b *[16]byte) []byte {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	gapPos, gapLen := -1, -1
	runPos, runLen := -1, -1
	for i, x := range w {
		if x != 0 {
			if runPos >= 0 && runLen > gapLen {
				gapPos, gapLen = runPos, runLen
			}
			runPos, runLen = -1, -1
		} else if runPos >= 0 {
			runLen++
		} else {
			runPos, runLen = i, 1
		}
	}
	if runPos >= 0 && runLen > gapLen {
		gapPos, gapLen = runPos, runLen
	}
	for i := 0; i < 8; i++ {
		switch {
		case i == gapPos:
			if i == 0 {
				dst = append(dst, ':')
			}
			dst = append(dst, ':')
			i += gapLen - 1
		case i == 6 && gapPos == 0 && (gapLen == 6 || gapLen == 5 && w[5] == 0xffff):
			return appendInet4(dst, b[12:16])
		default:
			dst = strconv.AppendUint(dst, uint64(w[i]), 16)
			if i != 7 {
				dst = append(dst, ':')
			}
		}
	}
	return dst
}
