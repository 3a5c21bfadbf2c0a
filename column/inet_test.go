package column

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/google/uuid"
)

// TestFixedBinNative: UUID, IPv4 and IPv6 columns held as MariaDB's text
// encode as ch-go's columns (what clickhouse-go sends) encode the same
// values, NULLs as zeros after the null map; text that is not a value of
// the type is refused.
func TestFixedBinNative(t *testing.T) {
	uuids := []string{"6ccd780c-baba-1026-9564-5b8c656024db", "00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff", "01890a5d-ac96-774b-bcce-b302099a8057"}
	var refU proto.ColUUID
	for _, s := range uuids {
		refU.Append(uuid.MustParse(s))
	}
	v4 := []string{"1.2.3.4", "0.0.0.0", "255.255.255.255", "10.0.0.1"}
	var ref4 proto.ColIPv4
	for _, s := range v4 {
		ref4.Append(proto.ToIPv4(netip.MustParseAddr(s)))
	}
	v6 := []string{"::ffff:1.2.3.4", "::", "2001:db8:85a3::8a2e:370:7334", "::1.2.3.4", "1:0:0:2::3", "1::2:3:4:5:6:7"}
	var ref6 proto.ColIPv6
	for _, s := range v6 {
		ref6.Append(proto.ToIPv6(netip.MustParseAddr(s)))
	}
	for _, c := range []struct {
		kind schema.CHKind
		vals []string
		ref  proto.ColInput
	}{
		{schema.CHUUID, uuids, refU}, {schema.CHIPv4, v4, ref4}, {schema.CHIPv6, v6, ref6},
	} {
		typ := schema.CHType{Kind: c.kind}
		buf := &Str{}
		for _, v := range c.vals {
			buf.AddString(v)
		}
		e := chnative.NewCapture()
		if err := Native(buf, typ)(e, nil); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		var want proto.Buffer
		c.ref.EncodeColumn(&want)
		if !bytes.Equal(e.Captured(), want.Buf) {
			t.Errorf("%s: Native\n%x\nwant (ch-go)\n%x", typ, e.Captured(), want.Buf)
		}
		// Nullable: the map, then a NULL's place as zeros.
		typ.Nullable = true
		nb := &Str{Nulls: Nulls{Nullable: true}}
		nb.AddString(c.vals[0])
		nb.AppendNull()
		e = chnative.NewCapture()
		if err := Native(nb, typ)(e, nil); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		width := len(want.Buf) / len(c.vals)
		wantNull := append([]byte{0, 1}, want.Buf[:width]...)
		wantNull = append(wantNull, make([]byte, width)...)
		if !bytes.Equal(e.Captured(), wantNull) {
			t.Errorf("%s: Native\n%x\nwant\n%x", typ, e.Captured(), wantNull)
		}
	}
	for kind, bad := range map[schema.CHKind]string{schema.CHUUID: "6ccd780c-baba-1026-9564-5b8c656024dx",
		schema.CHIPv4: "::1", schema.CHIPv6: "1.2.3.4"} {
		buf := &Str{}
		buf.AddString(bad)
		if err := Native(buf, schema.CHType{Kind: kind})(chnative.NewCapture(), nil); err == nil {
			t.Errorf("%v %q: no error", kind, bad)
		}
	}
}
