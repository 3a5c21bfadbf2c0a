package fixedbin

import (
	"encoding/hex"
	"testing"
)

// TestFixedBinText: the bytes of UUID, INET4 and INET6 values (as the
// binlog carries them, trailing zeros dropped) print as MariaDB 10.11
// printed them (SELECT on the server, HEX() of the same values).
func TestFixedBinText(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		hex  string
		want string
	}{
		{UUID, "6CCD780CBABA102695645B8C656024DB", "6ccd780c-baba-1026-9564-5b8c656024db"},
		{UUID, "123E4567E89B42D3A4564266141740", "123e4567-e89b-42d3-a456-426614174000"},
		{UUID, "", "00000000-0000-0000-0000-000000000000"},
		{UUID, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "ffffffff-ffff-ffff-ffff-ffffffffffff"},
		{Inet4, "01020304", "1.2.3.4"},
		{Inet4, "", "0.0.0.0"},
		{Inet4, "FFFFFFFF", "255.255.255.255"},
		{Inet4, "0A", "10.0.0.0"},
		{Inet6, "00000000000000000000FFFF01020304", "::ffff:1.2.3.4"},
		{Inet6, "", "::"},
		{Inet6, "20010DB885A3000000008A2E03707334", "2001:db8:85a3::8a2e:370:7334"},
		{Inet6, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{Inet6, "00000000000000000000000000000001", "::1"},
		{Inet6, "00000000000000000000000001020304", "::1.2.3.4"},
		{Inet6, "00010000000000020000000000000003", "1:0:0:2::3"},
		{Inet6, "00010000000200030004000500060007", "1::2:3:4:5:6:7"},
		{Inet6, "00000000000000000000FFFF", "::ffff:0.0.0.0"},
		{Inet6, "0001", "1::"},
		{Inet6, "00010000000200000003", "1:0:2:0:3::"},
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := AppendText(nil, c.kind, b)
		if !ok || string(got) != c.want {
			t.Errorf("%s %s: %q %v, want %q", c.kind, c.hex, got, ok, c.want)
		}
	}
	if _, ok := AppendText(nil, Inet4, []byte{1, 2, 3, 4, 5}); ok {
		t.Error("5 bytes in an INET4: no error")
	}
	if _, ok := AppendText(nil, UUID, make([]byte, 17)); ok {
		t.Error("17 bytes in a UUID: no error")
	}
}
