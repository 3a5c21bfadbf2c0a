package block

import (
	"encoding/hex"
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
)

// TestFixedBinText: the bytes of UUID, INET4 and INET6 values (as the
// binlog carries them, trailing zeros dropped) print as MariaDB 10.11
// printed them (SELECT on the server, HEX() of the same values).
func TestFixedBinText(t *testing.T) {
	for _, c := range []struct {
		kind schema.MySQLKind
		hex  string
		want string
	}{
		{schema.KindUUID, "6CCD780CBABA102695645B8C656024DB", "6ccd780c-baba-1026-9564-5b8c656024db"},
		{schema.KindUUID, "123E4567E89B42D3A4564266141740", "123e4567-e89b-42d3-a456-426614174000"},
		{schema.KindUUID, "", "00000000-0000-0000-0000-000000000000"},
		{schema.KindUUID, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "ffffffff-ffff-ffff-ffff-ffffffffffff"},
		{schema.KindInet4, "01020304", "1.2.3.4"},
		{schema.KindInet4, "", "0.0.0.0"},
		{schema.KindInet4, "FFFFFFFF", "255.255.255.255"},
		{schema.KindInet4, "0A", "10.0.0.0"},
		{schema.KindInet6, "00000000000000000000FFFF01020304", "::ffff:1.2.3.4"},
		{schema.KindInet6, "", "::"},
		{schema.KindInet6, "20010DB885A3000000008A2E03707334", "2001:db8:85a3::8a2e:370:7334"},
		{schema.KindInet6, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{schema.KindInet6, "00000000000000000000000000000001", "::1"},
		{schema.KindInet6, "00000000000000000000000001020304", "::1.2.3.4"},
		{schema.KindInet6, "00010000000000020000000000000003", "1:0:0:2::3"},
		{schema.KindInet6, "00010000000200030004000500060007", "1::2:3:4:5:6:7"},
		{schema.KindInet6, "00000000000000000000FFFF", "::ffff:0.0.0.0"},
		{schema.KindInet6, "0001", "1::"},
		{schema.KindInet6, "00010000000200000003", "1:0:2:0:3::"},
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fixedBinText(nil, c.kind, b)
		if err != nil || string(got) != c.want {
			t.Errorf("%s %s: %q %v, want %q", kindName(c.kind), c.hex, got, err, c.want)
		}
	}
	if _, err := fixedBinText(nil, schema.KindInet4, []byte{1, 2, 3, 4, 5}); err == nil {
		t.Error("5 bytes in an INET4: no error")
	}
	if _, err := fixedBinText(nil, schema.KindUUID, make([]byte, 17)); err == nil {
		t.Error("17 bytes in a UUID: no error")
	}
}
