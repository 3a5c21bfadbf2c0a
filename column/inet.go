package column

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
)

// UUID, IPv4 and IPv6 columns hold MariaDB's text of their values (what a
// String column would hold, so the clickhouse-go fallback takes them as
// strings too) and are written in the types' Native layout:
//   - UUID: two UInt64 halves, each little-endian: the first 8 bytes of the
//     UUID reversed, then the last 8 reversed (ClickHouse's UUID is a
//     UInt128 of high and low halves; checked by a round trip with 18.16).
//   - IPv4: a UInt32, little-endian, of the address's number.
//   - IPv6: the 16 bytes in network order, as FixedString(16) holds them.

// fixedBinColumn is the encoder of a UUID, IPv4 or IPv6 column, or nil. A
// NULL's place holds no text and is written as zeros; every value holds
// text (block's converters write none empty).
func fixedBinColumn(buf *Str, t schema.CHType) NativeFn {
	switch t.Kind {
	case schema.CHUUID:
		return eachString(buf, func(e *chnative.Encoder, v []byte) error {
			if len(v) == 0 {
				e.Zeros(16)
				return nil
			}
			u, err := ParseUUID(v)
			if err != nil {
				return err
			}
			e.Uint64(binary.BigEndian.Uint64(u[:8]))
			e.Uint64(binary.BigEndian.Uint64(u[8:]))
			return nil
		})
	case schema.CHIPv4:
		return eachString(buf, func(e *chnative.Encoder, v []byte) error {
			if len(v) == 0 {
				e.Zeros(4)
				return nil
			}
			a, err := netip.ParseAddr(unsafe.String(unsafe.SliceData(v), len(v)))
			if err != nil || !a.Is4() {
				return fmt.Errorf("not an IPv4 address: %q", v)
			}
			b := a.As4()
			e.Uint32(binary.BigEndian.Uint32(b[:]))
			return nil
		})
	case schema.CHIPv6:
		return eachString(buf, func(e *chnative.Encoder, v []byte) error {
			if len(v) == 0 {
				e.Zeros(16)
				return nil
			}
			a, err := netip.ParseAddr(unsafe.String(unsafe.SliceData(v), len(v)))
			if err != nil || !a.Is6() || a.Zone() != "" {
				return fmt.Errorf("not an IPv6 address: %q", v)
			}
			b := a.As16()
			e.Bytes(b[:])
			return nil
		})
	}
	return nil
}

// ParseUUID reads a UUID's text: 32 hex digits, with hyphens after the
// 8th, 12th, 16th and 20th.
func ParseUUID(v []byte) ([16]byte, error) {
	var u [16]byte
	if len(v) != 36 || v[8] != '-' || v[13] != '-' || v[18] != '-' || v[23] != '-' {
		return u, fmt.Errorf("not a UUID: %q", v)
	}
	j := 0
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		d, ok := hexValue(v[i])
		if !ok {
			return u, fmt.Errorf("not a UUID: %q", v)
		}
		u[j/2] |= d << (4 * (1 - j%2))
		j++
	}
	return u, nil
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
