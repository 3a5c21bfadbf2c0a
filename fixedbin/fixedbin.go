// Package fixedbin prints MariaDB's fixed-size binary types, UUID, INET4
// and INET6, from their bytes exactly as MariaDB prints them
// (plugin/type_uuid, plugin/type_inet). It must not know ClickHouse or
// any column buffer: callers append its text where they keep values.
package fixedbin

import "strconv"

// Kind is one of the types.
type Kind int

// The types, with their widths in bytes.
const (
	UUID  Kind = iota + 1 // 16
	Inet4                 // 4
	Inet6                 // 16
)

// Width is the type's size in bytes.
func (k Kind) Width() int {
	if k == Inet4 {
		return 4
	}
	return 16
}

func (k Kind) String() string {
	switch k {
	case UUID:
		return "UUID"
	case Inet4:
		return "INET4"
	}
	return "INET6"
}

// AppendText appends the text of a value v, its bytes with trailing zero
// bytes possibly dropped (as the binlog drops them), to dst; ok is false
// when v is longer than the type.
func AppendText(dst []byte, k Kind, v []byte) ([]byte, bool) {
	var b [16]byte
	if len(v) > k.Width() {
		return dst, false
	}
	copy(b[:], v)
	switch k {
	case UUID:
		return appendUUID(dst, &b), true
	case Inet4:
		return appendInet4(dst, b[:4]), true
	}
	return appendInet6(dst, &b), true
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
