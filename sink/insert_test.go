package sink

import (
	"errors"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
)

func TestCheckHeader(t *testing.T) {
	target := &schema.Target{Columns: []schema.TargetColumn{
		{Name: "id", Type: schema.CHType{Kind: schema.CHUInt64}},
		{Name: "at", Type: schema.CHType{Kind: schema.CHDateTime, Zone: "UTC"}},
	}}
	if err := checkHeader(target, []chnative.Column{{Name: "id", Type: "UInt64"}, {Name: "at", Type: "DateTime('UTC')"}}); err != nil {
		t.Fatal(err)
	}
	var mismatch *headerMismatch
	for _, cols := range [][]chnative.Column{
		{{Name: "id", Type: "UInt64"}},
		{{Name: "id", Type: "UInt64"}, {Name: "at", Type: "DateTime"}},
		{{Name: "id", Type: "UInt64"}, {Name: "ts", Type: "DateTime('UTC')"}},
	} {
		err := checkHeader(target, cols)
		if !errors.As(err, &mismatch) {
			t.Errorf("%v: want a header mismatch, got %v", cols, err)
		} else if !strings.Contains(err.Error(), "ClickHouse") {
			t.Errorf("%v: message %q does not say what differs", cols, err)
		}
	}
}
