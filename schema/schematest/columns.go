package schematest

import (
	"testing"

	"github.com/binlog2ch/binlog2ch/schema"
)

// CHColumn is a ClickHouse column by name and type, the type spelled as
// CREATE TABLE writes it, system.columns lists it and a server names it in
// an INSERT's header block.
type CHColumn struct{ Name, Type string }

// EveryTypeColumns is what EveryType becomes on a server with caps under
// opts: every target column in order, binlog2ch's own (_version,
// _is_deleted) included.
func EveryTypeColumns(t testing.TB, caps schema.Capabilities, opts schema.Options) []CHColumn {
	t.Helper()
	target, err := schema.Map(EveryType(t), "analytics", caps, opts, schema.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cols := make([]CHColumn, len(target.Columns))
	for i, c := range target.Columns {
		cols[i] = CHColumn{Name: c.Name, Type: c.Type.String()}
	}
	return cols
}

// EveryTypeModernColumns are the columns binlog2ch writes for EveryType on
// a current server (schema.ClickHouseModern) with schema.tinyint1_as: bool,
// so that Bool is among them beside Date32, DateTime64, Decimal(65, 30)
// (Decimal256), LowCardinality(Nullable(String)) and Enum8: the types an
// INSERT header from a current server names. testdata/ddl/
// every_type_columns.modern.txt pins them.
func EveryTypeModernColumns(t testing.TB) []CHColumn {
	t.Helper()
	opts := schema.DefaultOptions()
	opts.TinyInt1As = schema.TinyInt1AsBool
	return EveryTypeColumns(t, schema.ClickHouseModern, opts)
}
