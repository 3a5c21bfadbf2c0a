package gtid

import "slices"

// Tables is, per replicated table (db.table), the newest transaction
// number of each GTID origin that changed it: when a server lacks some of
// the transactions binlog2ch applied, the tables they may have changed are
// those touched at or after the first one missing.
type Tables map[string]map[string]int64

// Clone is a deep copy.
func (t Tables) Clone() Tables {
	c := make(Tables, len(t))
	for k, v := range t {
		m := make(map[string]int64, len(v))
		for o, n := range v {
			m[o] = n
		}
		c[k] = m
	}
	return c
}

// Affected lists the tables a transaction in gaps may have changed.
func (t Tables) Affected(gaps []Gap) []string {
	var out []string
	for table, origins := range t {
		for _, g := range gaps {
			if n, ok := origins[g.Origin]; ok && n >= g.From {
				out = append(out, table)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
