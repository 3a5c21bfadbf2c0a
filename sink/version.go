package sink

// Row versions come from binlog coordinates, so a replay writes the same
// versions and a later change always has a larger one:
// file index (20 bits) | event end position (32 bits) | row in event (12 bits).
const (
	versionFileBits = 20
	versionRowBits  = 12
	MaxVersionRow   = 1<<versionRowBits - 1
)

// Version is the _version of row `row` of the event ending at pos in the
// binlog file with index file. Rows beyond the 4095th of one event share the
// last version; such events need binlog_row_event_max_size far above its
// default, and two changes of one key within one event are rarer still.
func Version(file, pos uint32, row int) uint64 {
	if row > MaxVersionRow {
		row = MaxVersionRow
	}
	return uint64(file)<<(32+versionRowBits) | uint64(pos)<<versionRowBits | uint64(row)
}
