package block

import (
	"fmt"

	"github.com/binlog2ch/binlog2ch/column"
	"github.com/binlog2ch/binlog2ch/fixedbin"
	"github.com/binlog2ch/binlog2ch/schema"
)

// MariaDB's UUID, INET4 and INET6 arrive as their bytes on every path: the
// binlog carries a UUID in the order of its text (sql_type_uuid.h's pack
// undoes the record's swap for index order), an INET4 or INET6 in network
// order, all with trailing zero bytes dropped as BINARY's are; a table copy
// reads them CAST AS BINARY (SelectExpr). Each is kept as MariaDB prints
// it, so a String column holds MariaDB's text and the UUID, IPv4 and IPv6
// columns' Native encoding (package column) parses it back.

// fixedBinKind is a column's fixedbin kind, 0 for other columns.
func fixedBinKind(c *schema.Column) fixedbin.Kind {
	switch c.Kind {
	case schema.KindUUID:
		return fixedbin.UUID
	case schema.KindInet4:
		return fixedbin.Inet4
	case schema.KindInet6:
		return fixedbin.Inet6
	}
	return 0
}

// addFixedBin appends the text of a value's bytes v as one value of sb.
func addFixedBin(sb *column.Str, k fixedbin.Kind, v []byte) error {
	sb.Room(39)
	var ok bool
	if sb.Arena, ok = fixedbin.AppendText(sb.Arena, k, v); !ok {
		return errMsg(fmt.Sprintf("%d bytes, longer than %s's %d", len(v), k, k.Width()))
	}
	sb.End()
	return nil
}
