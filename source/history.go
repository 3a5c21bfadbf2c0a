package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// History identifies a binlog history at a position, so a checkpoint is
// never applied to a binlog that restarted (RESET MASTER, a server
// rebuilt from a backup, a changed log_bin basename) where the same file
// name and offset mean other events.
type History struct {
	// FileCreated is the header timestamp of the file's format
	// description event: when the file was begun.
	FileCreated uint32 `json:"file_created"`
	// The header of the event that ends at the position; LastSize 0 when
	// the position is at the start of its file's events.
	LastType byte   `json:"last_type,omitempty"`
	LastTime uint32 `json:"last_time,omitempty"`
	LastSize uint32 `json:"last_size,omitempty"`
}

// HistoryError: the server's binlog at the checkpoint's position is not
// the binlog the checkpoint was saved on.
type HistoryError struct {
	At     Position
	Reason string
}

func (e *HistoryError) Error() string {
	return fmt.Sprintf("binlog %s is not the binlog binlog2ch's checkpoint was saved on: %s. The server's binlog history restarted (RESET MASTER, a server rebuilt from a backup or a snapshot, a changed log_bin basename), so that position now names other events or none", e.At, e.Reason)
}

// VerifyHistory checks that the server's binlog at a checkpoint's
// position is the one it was saved on (see checkHistory): a
// *HistoryError when not. Failures to read are left to Run.
func (s *Stream) VerifyHistory(ctx context.Context, p Position, hist History) error {
	if hist.FileCreated == 0 {
		return nil // saved before histories were kept
	}
	s.pos, s.last = p, History{}
	from := s.expectHistory(p, hist)
	defer func() { s.expect = nil }()
	d, err := s.startDump(ctx, from, nil)
	if err != nil {
		return nil
	}
	defer d.Close()
	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second+s.cfg.MySQL.StallTimeout)
	defer cancel()
	for s.expect != nil {
		ev, err := d.GetEvent(readCtx)
		var me *mysql.MyError
		switch {
		case errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && !strings.Contains(me.Message, "first log file name"):
			// The file is there (a purged one is the stream's to report)
			// but no event ends at the position. The server's own words
			// are left out when they blame max_allowed_packet: it says
			// that of a position inside an event, which would send the
			// operator the wrong way.
			why := "the server cannot send the event that ended there: " + compact(err)
			if strings.Contains(me.Message, "max_allowed_packet") {
				why = "no event of the server's binlog ends there: the position falls inside one (the server refused to read from it, error 1236)"
			}
			return &HistoryError{At: p, Reason: why}
		case err != nil:
			return nil
		}
		hd := ev.Header
		if hd.EventType == replication.HEARTBEAT_EVENT || hd.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
			continue
		}
		if _, err := s.checkHistory(ev); err != nil {
			return err
		}
	}
	return nil
}

// historyAt is the History of a boundary the stream resumes at.
func (s *Stream) historyAt(p Position) History {
	for _, x := range s.prepared {
		if x.start == p {
			return x.hist
		}
	}
	if p == s.boundary {
		return s.boundHist
	}
	return History{}
}

// checkHistory checks the events a connection begins with against the
// History expected at its start: the file's format description, then
// (when the stream was asked for the binlog from the event before the
// boundary) that event, which it consumes. Events the server sends ahead
// of the requested position (a rotation to the file, its header, with no
// or older positions) are consumed too.
func (s *Stream) checkHistory(ev *replication.BinlogEvent) (consumed bool, err error) {
	hd, want := ev.Header, s.expect
	fail := func(reason string) (bool, error) {
		s.expect = nil
		return false, fatalError{&HistoryError{At: s.pos, Reason: reason}}
	}
	switch ev.Event.(type) {
	case *replication.RotateEvent:
		return true, nil
	case *replication.FormatDescriptionEvent:
		if hd.Timestamp != want.FileCreated {
			return fail(fmt.Sprintf("the server's %s was begun at %s, the checkpoint's at %s", s.pos.File, unixText(hd.Timestamp), unixText(want.FileCreated)))
		}
		s.fileCreated = hd.Timestamp
		if hd.LogPos == 0 || hd.LogPos < s.pos.Pos {
			return true, nil // re-sent ahead of the position
		}
	}
	if want.LastSize == 0 {
		s.expect = nil
		return false, nil
	}
	if hd.LogPos == 0 {
		return true, nil // a header event the server made up
	}
	if byte(hd.EventType) != want.LastType || hd.Timestamp != want.LastTime || hd.EventSize != want.LastSize || hd.LogPos != s.pos.Pos {
		return fail(fmt.Sprintf("the event before it is a %s of %d bytes written at %s ending at %d; the checkpoint's was a %s of %d bytes written at %s",
			hd.EventType, hd.EventSize, unixText(hd.Timestamp), hd.LogPos, replication.EventType(want.LastType), want.LastSize, unixText(want.LastTime)))
	}
	s.expect = nil
	s.last = History{LastType: want.LastType, LastTime: want.LastTime, LastSize: want.LastSize}
	if _, ok := ev.Event.(*replication.TransactionPayloadEvent); ok {
		s.skipTo = hd.LogPos // its events follow the marker
	}
	return true, nil
}

func unixText(ts uint32) string { return time.Unix(int64(ts), 0).UTC().Format(time.RFC3339) }

// expectHistory has the stream check hist at a connection that resumes at
// p, and returns where to ask the binlog from: the start of the event that
// ends at p, which checkHistory compares with hist's, when p is past it.
func (s *Stream) expectHistory(p Position, hist History) Position {
	s.expect = &hist
	if hist.LastSize > 0 && p.Pos >= 4+hist.LastSize {
		p.Pos -= hist.LastSize
	} else {
		s.expect.LastSize = 0
	}
	return p
}
