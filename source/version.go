package source

// Row versions come from binlog coordinates, so a replay writes the same
// versions and a later change always has a larger one:
//
//	F (20 bits) | event end position (32 bits) | row in event (12 bits)
//
// F, a file's version file number (VersionFile), is the binlog file's index
// plus the history's version offset. On the first history binlog2ch
// follows the offset is 0, so F is the file's index; when
// the binlog history changes (a failover to another server, RESET MASTER),
// the new history's offset puts its first file at the old history's
// version ceiling, above every version written before (see
// docs/replication.md).
const (
	versionRowBits = 12
	// VersionSlots is how many rows of one event get versions of their
	// own; later rows share the last.
	VersionSlots = 1 << versionRowBits
	// MaxVersionRow is the last row slot of an event.
	MaxVersionRow = VersionSlots - 1
)

// RowVersion is the _version of row `row` of the event ending at pos in the
// binlog file whose F (index plus the history's offset) is f. Rows beyond
// the 4095th of one event share the last version; such events need
// binlog_row_event_max_size far above its default, and two changes of one
// key within one event are rarer still.
func RowVersion(f, pos uint32, row int) uint64 {
	if row > MaxVersionRow {
		row = MaxVersionRow
	}
	return uint64(f)<<(32+versionRowBits) | uint64(pos)<<versionRowBits | uint64(row)
}

// VersionFile is F for a file index on a history with offset off, and
// whether it fits the 20 bits versions hold.
func VersionFile(index uint32, off int64) (uint32, bool) {
	f := int64(index) + off
	return uint32(f), f >= 0 && f <= MaxFileIndex
}
