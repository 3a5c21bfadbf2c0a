package block

import "github.com/binlog2ch/binlog2ch/schema"

// CountImages is the number of full row images in data, the rows of one
// rows event left undecoded (binlog.RawRows), for a table whose columns
// have these binlog types and metadata (the table map's). Every column
// must be RawDecodable.
func CountImages(types []byte, meta []uint16, data []byte) (int, error) {
	if len(types) != len(meta) || len(types) == 0 {
		return 0, errMsg("table map without columns, or with column types and metadata of different lengths")
	}
	layouts := make([]rawLayout, len(types))
	for i := range types {
		l, ok := layoutOf(&schema.Column{BinlogType: types[i], BinlogMeta: meta[i]})
		if !ok {
			return 0, errMsg("column type not decodable from binlog bytes")
		}
		layouts[i] = l
	}
	nb := (len(layouts) + 7) / 8
	n := 0
	for len(data) > 0 {
		if len(data) < nb {
			return 0, errShort
		}
		pos := nb
		for i := range layouts {
			if data[i/8]&(1<<(i%8)) != 0 {
				continue // NULL
			}
			k, err := layouts[i].size(data[pos:])
			if err != nil {
				return 0, err
			}
			pos += k
		}
		data = data[pos:]
		n++
	}
	return n, nil
}
