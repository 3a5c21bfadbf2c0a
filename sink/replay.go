package sink

// After a restart the stream reads the binlog again from the checkpoint,
// which is the newest transaction boundary before which every table's rows
// are stored: a table whose writer had stored more (its batches are not
// cut where the others' are) gets those rows again. The checkpoint records
// how far each such table was stored (state.StreamState.Stored, the first
// version of its last stored rows event), and the table's new writer skips
// the rows events up to there instead of sending them again as a second
// copy of each row, which every query without FINAL would count (and a
// changelog table would keep).
//
// That is exact because a table's rows events reach its writer in the
// order of their versions, and their versions are the same on every read
// of the same binlog (source.RowVersion): an event at or below the
// recorded version was stored, with every earlier one. DDL ends the skip,
// a copy's swap too: from there, what the table holds in ClickHouse may
// no longer be what the rows before it made (a TRUNCATE read again would
// have emptied it), so the rest is sent again, as without a record.

// SkipStored has the writer skip the binlog rows events whose first
// version is at or below v, until the first message that is not one.
func (w *Writer) SkipStored(v uint64) { w.skipStored = v }

// StoredVersion is the first version of the last binlog rows event whose
// rows are in ClickHouse with those of every earlier message (0: none
// yet). Read from other goroutines.
func (w *Writer) StoredVersion() uint64 { return w.storedVersion.Load() }

// stored reports whether m is a rows event SkipStored skips, and ends the
// skip at the first message that is not.
func (w *Writer) stored(m *Message) bool {
	if m.FlushDone != nil {
		return false // a barrier: it changes nothing
	}
	if m.DDL == 0 && m.Run == nil && !m.Snapshot && m.Version <= w.skipStored {
		w.lastVersion = m.Version
		w.skippedStored++
		w.c.m.ReplaySkipped.Inc()
		return true
	}
	if w.skippedStored > 0 {
		w.log.Info("rows events read again after the restart and stored before it were not sent again",
			"events", w.skippedStored, "through_version", w.skipStored, "binlog", m.At.String())
	}
	w.skipStored, w.skippedStored = 0, 0
	return false
}
