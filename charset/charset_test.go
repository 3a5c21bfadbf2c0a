package charset

import (
	"bytes"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

func openMySQL(t *testing.T) *sql.DB {
	t.Helper()
	srv := servertest.Need(t)
	db, err := sql.Open("mysql", srv.MySQL.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// queryHex runs a SELECT of HEX() expressions and returns each as bytes.
func queryHex(t *testing.T, db *sql.DB, exprs []string) [][]byte {
	t.Helper()
	out := make([][]byte, len(exprs))
	dest := make([]any, len(exprs))
	texts := make([]string, len(exprs))
	for i := range texts {
		dest[i] = &texts[i]
	}
	if err := db.QueryRow("SELECT " + strings.Join(exprs, ", ")).Scan(dest...); err != nil {
		t.Fatalf("%s...: %v", exprs[0], err)
	}
	for i, s := range texts {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestSingleByteSetsMatchMySQL converts every byte of every single-byte
// set with MySQL's CONVERT(... USING utf8mb4) on the real server and with
// the decoder: the same character, or, where MySQL has none for the byte
// (it prints '?'), an error.
func TestSingleByteSetsMatchMySQL(t *testing.T) {
	db := openMySQL(t)
	names := sortedKeys(singleByte)
	for _, name := range names {
		d, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		exprs := make([]string, 256)
		for b := range exprs {
			exprs[b] = fmt.Sprintf("HEX(CONVERT(CONVERT(X'%02X' USING %s) USING utf8mb4))", b, name)
		}
		mysql := queryHex(t, db, exprs)
		bad := 0
		for b, want := range mysql {
			got, err := d.Append(nil, []byte{byte(b)})
			none := bytes.Equal(want, []byte("?")) && b != '?'
			switch {
			case none && err == nil:
				t.Errorf("%s byte %02X: MySQL has no character for it, the decoder gave %q", name, b, got)
			case !none && err != nil:
				t.Errorf("%s byte %02X: MySQL gives %q (%X), the decoder failed: %v", name, b, want, want, err)
			case !none && !bytes.Equal(got, want):
				t.Errorf("%s byte %02X: MySQL gives %q (%X), the decoder %q (%X)", name, b, want, want, got, got)
			default:
				continue
			}
			if bad++; bad > 5 {
				break
			}
		}
		// A whole text at once, and an error leaving dst as it was.
		all := make([]byte, 0, 256)
		var want []byte
		for b, m := range mysql {
			if !bytes.Equal(m, []byte("?")) || b == '?' {
				all, want = append(all, byte(b)), append(want, m...)
			}
		}
		if got, err := d.Append([]byte("x"), all); err != nil || !bytes.Equal(got[1:], want) {
			t.Errorf("%s: every valid byte at once: %v; differs from MySQL: %v", name, err, !bytes.Equal(got, want))
		}
	}
}

// TestDoubleByteSetsMatchMySQL converts every two-byte code (lead
// 0x81-0xFE, trail 0x40-0xFE) of every double-byte set with MySQL's
// CONVERT and with the decoder: every code MySQL has a character for
// converts to that character. (Codes MySQL has none for, which its columns
// cannot hold, may convert to what x/text has.)
func TestDoubleByteSetsMatchMySQL(t *testing.T) {
	db := openMySQL(t)
	var codes [][]byte
	for lead := 0x81; lead <= 0xfe; lead++ {
		for trail := 0x40; trail <= 0xfe; trail++ {
			codes = append(codes, []byte{byte(lead), byte(trail)})
		}
	}
	names := sortedKeys(multiByte)
	for _, name := range names {
		d, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		var all, want []byte
		held, bad := 0, 0
		for i := 0; i < len(codes); i += 1000 {
			part := codes[i:min(i+1000, len(codes))]
			exprs := make([]string, len(part))
			for j, c := range part {
				exprs[j] = fmt.Sprintf("HEX(CONVERT(CONVERT(X'%X' USING %s) USING utf8mb4))", c, name)
			}
			for j, my := range queryHex(t, db, exprs) {
				if bytes.Contains(my, []byte("?")) {
					continue // MySQL has no character for it
				}
				held++
				got, err := d.Append(nil, part[j])
				if err != nil || !bytes.Equal(got, my) {
					if bad++; bad <= 5 {
						t.Errorf("%s %X: MySQL gives %q; the decoder %q, %v", name, part[j], my, got, err)
					}
					continue
				}
				all, want = append(all, part[j]...), append(want, my...)
			}
		}
		if got, err := d.Append(nil, all); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: every code at once: %v, equal %v", name, err, bytes.Equal(got, want))
		}
		t.Logf("%s: %d codes held by MySQL, all converted alike", name, held)
		if held < 7000 {
			t.Errorf("%s: MySQL holds only %d codes: the query is wrong", name, held)
		}
	}
}

// corpus is characters from many scripts, the astral planes included.
func corpus() []rune {
	var rs []rune
	for _, r := range [][2]rune{{0x20, 0x7e}, {0xa0, 0x17f}, {0x391, 0x3c9}, {0x401, 0x45f}, {0x5d0, 0x5ea},
		{0x3041, 0x3096}, {0x4e00, 0x4e80}, {0xac00, 0xac40}, {0xff01, 0xff5e}} {
		for c := r[0]; c <= r[1]; c++ {
			if c != '\'' && c != '\\' {
				rs = append(rs, c)
			}
		}
	}
	return append(rs, '€', '😀', 0x20000, 0x10fffd, 0xfffd, 0xe000)
}

// TestUnicodeSetsMatchMySQL has MySQL encode the corpus in UCS-2, UTF-16,
// UTF-16LE and UTF-32 (UCS-2 cannot hold the astral characters) and the
// decoder turn the bytes back into the same characters.
func TestUnicodeSetsMatchMySQL(t *testing.T) {
	db := openMySQL(t)
	chars := corpus()
	for _, name := range []string{"ucs2", "utf16", "utf16le", "utf32"} {
		d, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		var all, want []byte
		held := 0
		for i := 0; i < len(chars); i += 200 {
			part := chars[i:min(i+200, len(chars))]
			exprs := make([]string, len(part))
			for j, c := range part {
				exprs[j] = fmt.Sprintf("HEX(CONVERT(_utf8mb4'%c' USING %s))", c, name)
			}
			for j, enc := range queryHex(t, db, exprs) {
				c := part[j]
				if c > 0xffff && name == "ucs2" {
					continue // MySQL writes '?' in UCS-2's encoding
				}
				held++
				if got, err := d.Append(nil, enc); err != nil || string(got) != string(c) {
					t.Errorf("%s: MySQL encodes %q (U+%04X) as %X; the decoder gives %q, %v", name, c, c, enc, got, err)
				}
				all, want = append(all, enc...), append(want, string(c)...)
			}
		}
		if got, err := d.Append(nil, all); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the corpus at once: %v, equal %v", name, err, bytes.Equal(got, want))
		}
		t.Logf("%s: %d of %d characters", name, held, len(chars))
	}
}

// TestInvalidAndUnsupported: bytes a set has no character for are an
// error that names the set and leaves dst as it was; sets without a table
// are refused by name.
func TestInvalidAndUnsupported(t *testing.T) {
	for _, c := range []struct {
		set string
		in  []byte
	}{
		{"ascii", []byte("ok\x80")},
		{"gbk", []byte{'a', 0x81}},    // a lead byte without its trail
		{"sjis", []byte{0x82}},        // likewise
		{"euckr", []byte{0xff, 0xff}}, // no such character
		{"utf16", []byte{0xd8, 0x00}}, // a lone surrogate
		{"utf16le", []byte{0x00, 0xdc, 'a', 0}},
		{"ucs2", []byte{0xd8, 0x3d, 0xde, 0x00}}, // UCS-2 has no surrogates
		{"utf32", []byte{0, 0x11, 0, 0}},         // beyond U+10FFFF
		{"utf32", []byte{0, 0, 0}},
		{"gb2312", []byte{0xa1}},
		{"greek", []byte("a\xaa")}, // ISO 8859-7:2003 only
	} {
		d, err := New(c.set)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Append([]byte("keep"), c.in)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Charset != c.set || string(got) != "keep" || !strings.Contains(err.Error(), c.set) {
			t.Errorf("%s %X: got %q, %v; want an InvalidError and dst unchanged", c.set, c.in, got, err)
		}
	}
	for _, name := range []string{"armscii8", "dec8", "hp8", "keybcs2", "swe7", "geostd8", "macce", "big5", "cp932", "ujis", "eucjpms", "tis620", "gb18030"} {
		if Supported(name) {
			t.Errorf("%s counted as supported", name)
		}
		var u *UnsupportedError
		if _, err := New(name); !errors.As(err, &u) || !strings.Contains(err.Error(), name) {
			t.Errorf("New(%s) = %v, want an UnsupportedError naming it", name, err)
		}
	}
	for _, name := range []string{"utf8mb4", "UTF8MB3", "utf8", "", "binary"} {
		if !Passthrough(name) || !Supported(name) {
			t.Errorf("%q should pass through", name)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct{ set, text string }{
		{"latin1", "caf\xe9 cr\xe8me br\xfbl\xe9e, na\xefve fa\xe7ade"},
		{"gbk", "\xd6\xd0\xce\xc4\xb2\xe2\xca\xd4 abc \xd6\xd0\xce\xc4"},
	} {
		d, err := New(c.set)
		if err != nil {
			b.Fatal(err)
		}
		src, dst := []byte(c.text), make([]byte, 0, 256)
		b.Run(c.set, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = d.Append(dst[:0], src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sortedKeys are a map's keys in order, for tests that report in order.
func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
