package block

import (
	"strconv"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// BinlogValueSize is the length of the value at the start of p of a column
// of binlog type typ with table-map metadata meta, as it lies in a row
// image: the types binlog2ch decodes itself (RawDecodable), JSON (a
// little-endian length of meta bytes, then the value) and the temporal
// types from before MySQL 5.6. Other types give an error: their length
// is not known here.
func BinlogValueSize(typ byte, meta uint16, p []byte) (int, error) {
	if l, ok := layoutOf(&schema.Column{BinlogType: typ, BinlogMeta: meta}); ok {
		return l.size(p)
	}
	l := rawLayout{}
	switch typ {
	case mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_VECTOR:
		if meta < 1 || meta > 4 {
			return 0, errMsg("binlog row image: a length prefix of " + strconv.Itoa(int(meta)) + " bytes")
		}
		l.prefix = int(meta)
	case mysql.MYSQL_TYPE_TIMESTAMP:
		l.fixed = 4
	case mysql.MYSQL_TYPE_DATETIME:
		l.fixed = 8
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_NEWDATE:
		l.fixed = 3
	default:
		return 0, errMsg("binlog row image: a value of MySQL type " + strconv.Itoa(int(typ)) + " whose length binlog2ch does not know")
	}
	return l.size(p)
}
