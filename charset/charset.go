// Package charset converts text in MySQL's character sets to UTF-8, which
// is what ClickHouse's String holds and what a MySQL client reading with
// utf8mb4 sees. The binlog carries a column's bytes in the column's own
// character set; without this a latin1 'café' would land as 63 61 66 E9
// beside the snapshot's 63 61 66 C3 A9.
//
// The tables come from golang.org/x/text, with MySQL's own differences
// applied (its latin1, for one, is Windows-1252 with the five bytes Windows
// leaves undefined mapped to the C1 controls). The golden tests check
// every byte of the single-byte sets and every code of the double-byte
// ones against MySQL's own CONVERT on a real server; sets whose MySQL
// tables differ from x/text's in more than a handful of codes are refused.
// A byte sequence the set has no character for is an error, never a
// replacement character.
package charset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/transform"
)

// Passthrough reports whether a character set's bytes are UTF-8 already
// ("" is a column with no character set: numbers, binary strings).
func Passthrough(name string) bool {
	switch strings.ToLower(name) {
	case "", "utf8mb4", "utf8mb3", "utf8", "binary":
		return true
	}
	return false
}

// singleByte are the single-byte sets and x/text's table for each.
var singleByte = map[string]*charmap.Charmap{
	"latin1":   charmap.Windows1252,
	"latin2":   charmap.ISO8859_2,
	"latin5":   charmap.ISO8859_9,
	"latin7":   charmap.ISO8859_13,
	"greek":    charmap.ISO8859_7,
	"hebrew":   charmap.ISO8859_8,
	"cp1250":   charmap.Windows1250,
	"cp1251":   charmap.Windows1251,
	"cp1256":   charmap.Windows1256,
	"cp1257":   charmap.Windows1257,
	"koi8r":    charmap.KOI8R,
	"koi8u":    charmap.KOI8U,
	"cp866":    charmap.CodePage866,
	"cp850":    charmap.CodePage850,
	"cp852":    charmap.CodePage852,
	"macroman": charmap.Macintosh,
	"ascii":    nil, // 0x00-0x7F only
}

// isoC1 are the ISO 8859 sets whose bytes 0x80-0x9F MySQL reads as the C1
// controls of the same numbers, which x/text leaves undefined.
var isoC1 = map[string]bool{"latin2": true, "latin7": true, "greek": true, "hebrew": true}

// mysqlBytes are the bytes where MySQL's table (strings/ctype-*.cc) has
// another character than x/text's, or none (-1): older editions of the
// same standards. TestSingleByteSetsMatchMySQL found each on the server.
var mysqlBytes = map[string]map[byte]rune{
	// Windows-1252's five holes hold the C1 controls, as in ISO 8859-1.
	"latin1": {0x81: 0x81, 0x8d: 0x8d, 0x8f: 0x8f, 0x90: 0x90, 0x9d: 0x9d},
	// ISO 8859-7:1987, before the 2003 edition's quotes and currency signs.
	"greek":  {0xa1: 0x02bd, 0xa2: 0x02bc, 0xa4: -1, 0xa5: -1, 0xaa: -1},
	"hebrew": {0xaf: 0x203e},
	"koi8u":  {0x95: 0x2022, 0xae: 0x255d, 0xbe: 0x256c},
	"cp866":  {0xfc: 0x207f, 0xfd: 0x00b2},
	// Windows-1256 before the 1998 additions.
	"cp1256": {0x8a: -1, 0x8f: -1, 0x98: -1, 0x9a: -1, 0x9f: -1, 0xaa: -1, 0xc0: -1, 0xff: -1},
}

// multiByte are the double-byte sets, x/text's decoder for each, and the
// codes where MySQL's table differs from it (TestDoubleByteSetsMatchMySQL
// compares every code of each with the server's).
var multiByte = map[string]struct {
	enc encoding.Encoding
	// kana: the single bytes 0xA1-0xDF are characters (half-width
	// katakana), not lead bytes.
	kana  bool
	codes map[uint16]rune
}{
	"gbk":    {enc: simplifiedchinese.GBK},
	"gb2312": {enc: simplifiedchinese.GBK, codes: map[uint16]rune{0xa1a4: 0x30fb, 0xa1aa: 0x2015}},
	"euckr":  {enc: korean.EUCKR},
	// MySQL's sjis is JIS X 0208 as JIS maps it; x/text's is Microsoft's
	// (CP932) for these seven.
	"sjis": {enc: japanese.ShiftJIS, kana: true, codes: map[uint16]rune{
		0x815f: '\\', 0x8160: 0x301c, 0x8161: 0x2016, 0x817c: 0x2212, 0x8191: 0x00a2, 0x8192: 0x00a3, 0x81ca: 0x00ac}},
}

// unicodeSets are decoded with the standard library: UCS-2 and UTF-16
// (big-endian, as MySQL stores them), UTF-16LE, UTF-32.
var unicodeSets = map[string]bool{"ucs2": true, "utf16": true, "utf16le": true, "utf32": true}

// Sets whose MySQL tables differ from x/text's in many codes; converting
// them would need MySQL's tables: big5 (267 of 13,717 codes differ), cp932
// (1,880 user-defined codes x/text lacks), ujis and eucjpms (381 and 374
// differ, 566 missing), tis620 (41 bytes). gb18030 exists on MySQL only
// and could not be compared here. armscii8, dec8, hp8, keybcs2, swe7,
// geostd8 and macce have no table in x/text.

// Supported reports whether binlog2ch converts a character set to UTF-8.
func Supported(name string) bool {
	name = strings.ToLower(name)
	_, single := singleByte[name]
	_, multi := multiByte[name]
	return Passthrough(name) || single || multi || unicodeSets[name]
}

// UnsupportedError: a character set with no conversion to UTF-8.
type UnsupportedError struct{ Charset string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("character set %s has no conversion to UTF-8 in binlog2ch that matches MySQL's", e.Charset)
}

// InvalidError: bytes with no character in their character set.
type InvalidError struct {
	Charset string
	Bytes   []byte // from the first byte not converted, up to 16
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("bytes %X are no character of %s", e.Bytes, e.Charset)
}

// Decoder converts one character set's text to UTF-8. It reuses state
// between calls: one per goroutine.
type Decoder struct {
	name string
	// single-byte sets: the character of each byte, -1 for none.
	table *[256]rune
	// double-byte sets.
	tr    transform.Transformer
	kana  bool
	codes map[uint16]rune
	// ucs2, utf16, utf16le, utf32.
	unicode string
}

// New returns the decoder of a supported character set that is not
// Passthrough.
func New(name string) (*Decoder, error) {
	name = strings.ToLower(name)
	if cm, ok := singleByte[name]; ok {
		return &Decoder{name: name, table: newSingle(name, cm)}, nil
	}
	if mb, ok := multiByte[name]; ok {
		return &Decoder{name: name, tr: mb.enc.NewDecoder(), kana: mb.kana, codes: mb.codes}, nil
	}
	if unicodeSets[name] {
		return &Decoder{name: name, unicode: name}, nil
	}
	return nil, &UnsupportedError{Charset: name}
}

// Name is the character set's MySQL name.
func (d *Decoder) Name() string { return d.name }

// newSingle builds a single-byte set's table.
func newSingle(name string, cm *charmap.Charmap) *[256]rune {
	var t [256]rune
	for b := range t {
		switch {
		case cm == nil: // ascii
			t[b] = -1
			if b < 0x80 {
				t[b] = rune(b)
			}
		default:
			if t[b] = cm.DecodeByte(byte(b)); t[b] == utf8.RuneError {
				t[b] = -1
			}
		}
		if t[b] < 0 && isoC1[name] && b >= 0x80 && b <= 0x9f {
			t[b] = rune(b)
		}
	}
	for b, r := range mysqlBytes[name] {
		t[b] = r
	}
	return &t
}

// Append appends src converted to UTF-8 to dst. On error dst is returned
// as it was.
func (d *Decoder) Append(dst, src []byte) ([]byte, error) {
	switch {
	case d.table != nil:
		start := len(dst)
		for i, b := range src {
			if b < 0x80 && d.table[b] == rune(b) {
				dst = append(dst, b)
				continue
			}
			r := d.table[b]
			if r < 0 {
				return dst[:start], &InvalidError{Charset: d.name, Bytes: head(src[i:])}
			}
			dst = utf8.AppendRune(dst, r)
		}
		return dst, nil
	case d.unicode != "":
		return d.appendUnicode(dst, src)
	}
	return d.appendDouble(dst, src)
}

// appendDouble converts a double-byte set: runs of characters through
// x/text, the codes MySQL maps otherwise from its table.
func (d *Decoder) appendDouble(dst, src []byte) ([]byte, error) {
	start := len(dst)
	run := 0 // start of the run not yet converted
	for i := 0; i < len(src); {
		b := src[i]
		if b < 0x80 || d.kana && b >= 0xa1 && b <= 0xdf {
			i++
			continue
		}
		if i+1 >= len(src) {
			return dst[:start], &InvalidError{Charset: d.name, Bytes: head(src[i:])}
		}
		if r, ok := d.codes[uint16(b)<<8|uint16(src[i+1])]; ok {
			var err error
			if dst, err = d.transform(dst, src[run:i]); err != nil {
				return dst[:start], err
			}
			dst = utf8.AppendRune(dst, r)
			run = i + 2
		}
		i += 2
	}
	dst, err := d.transform(dst, src[run:])
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// transform converts a run with x/text, which replaces what it cannot
// decode with U+FFFD: none of these sets holds U+FFFD, so one means bytes
// without a character.
func (d *Decoder) transform(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst, nil
	}
	start := len(dst)
	d.tr.Reset()
	in := src
	for {
		if free := cap(dst) - len(dst); free < len(in)*2+utf8.UTFMax {
			dst = append(dst[:cap(dst)], make([]byte, len(in)*2+utf8.UTFMax)...)[:len(dst)]
		}
		nDst, nSrc, err := d.tr.Transform(dst[len(dst):cap(dst)], in, true)
		dst, in = dst[:len(dst)+nDst], in[nSrc:]
		if err == nil {
			break
		}
		if !errors.Is(err, transform.ErrShortDst) {
			return dst[:start], &InvalidError{Charset: d.name, Bytes: head(in)}
		}
	}
	if i := bytes.Index(dst[start:], replacement); i >= 0 {
		// Point at the source: the characters before i converted cleanly.
		at := 0
		for out := 0; at < len(src) && out < i; {
			w := 1
			if b := src[at]; !(b < 0x80 || d.kana && b >= 0xa1 && b <= 0xdf) {
				w = 2
			}
			r, _ := utf8.DecodeRune(dst[start+out:])
			out += utf8.RuneLen(r)
			at += w
		}
		return dst[:start], &InvalidError{Charset: d.name, Bytes: head(src[min(at, len(src)):])}
	}
	return dst, nil
}

var replacement = []byte(string(utf8.RuneError))

// appendUnicode converts UCS-2, UTF-16 (big- or little-endian) and UTF-32:
// code units, surrogate pairs checked (UCS-2 has none).
func (d *Decoder) appendUnicode(dst, src []byte) ([]byte, error) {
	start := len(dst)
	unit := 2
	if d.unicode == "utf32" {
		unit = 4
	}
	if len(src)%unit != 0 {
		return dst[:start], &InvalidError{Charset: d.name, Bytes: head(src[len(src)/unit*unit:])}
	}
	read := func(p []byte) rune {
		switch d.unicode {
		case "utf32":
			return rune(binary.BigEndian.Uint32(p))
		case "utf16le":
			return rune(binary.LittleEndian.Uint16(p))
		}
		return rune(binary.BigEndian.Uint16(p))
	}
	for i := 0; i < len(src); i += unit {
		r := read(src[i:])
		if unit == 2 && utf16.IsSurrogate(r) {
			if d.unicode == "ucs2" || r >= 0xdc00 || i+4 > len(src) {
				return dst[:start], &InvalidError{Charset: d.name, Bytes: head(src[i:])}
			}
			if r = utf16.DecodeRune(r, read(src[i+2:])); r == utf8.RuneError {
				return dst[:start], &InvalidError{Charset: d.name, Bytes: head(src[i:])}
			}
			i += 2
		}
		if !utf8.ValidRune(r) {
			return dst[:start], &InvalidError{Charset: d.name, Bytes: head(src[i:])}
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst, nil
}

func head(p []byte) []byte {
	if len(p) > 16 {
		p = p[:16]
	}
	return append([]byte(nil), p...)
}
