package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-mysql-org/go-mysql/replication"
)

// The events the stream's switch (handle.go) does not act on. Each type
// go-mysql knows is classified by what it can carry: harmless ones are
// passed by, counted per type (EventsSkipped) and logged once; the ones
// that can carry changes the daemon would miss stop the stream, as a MySQL
// replica stops. A type nobody lists (a newer server's) is passed by only
// with LOG_EVENT_IGNORABLE_F, the flag by which a server says a replica
// that does not know the event may ignore it; without the flag MySQL's
// replica stops ("unsupported non-ignorable event"), and so does binlog2ch.

// passedBy is a type the stream passes by or stops on.
type passedBy struct {
	name string // MySQL's or MariaDB's name: the metric's label
	what string // what the event is
	// stop: the event may carry changes ClickHouse would miss, and the
	// stream stops on it; fix is what to change on the source.
	stop bool
	fix  string
}

// MariaDB's compressed rows events of version 2, which go-mysql does not
// know (its compressed rows events are version 1, 166-168).
const (
	mariadbWriteRowsCompressed  replication.EventType = 169
	mariadbUpdateRowsCompressed replication.EventType = 170
	mariadbDeleteRowsCompressed replication.EventType = 171
)

var passedByTypes = map[replication.EventType]passedBy{
	replication.START_EVENT_V3:                 {name: "START_EVENT_V3", what: "the first event of a binlog of format 1 to 3 (a server before MySQL 5.0)"},
	replication.STOP_EVENT:                     {name: "STOP_EVENT", what: "the server stopped; its next file follows"},
	replication.INTVAR_EVENT:                   {name: "INTVAR_EVENT", what: "LAST_INSERT_ID or INSERT_ID of the statement after it, which the stream acts on"},
	replication.RAND_EVENT:                     {name: "RAND_EVENT", what: "the RAND() seeds of the statement after it, which the stream acts on"},
	replication.USER_VAR_EVENT:                 {name: "USER_VAR_EVENT", what: "a user variable of the statement after it, which the stream acts on"},
	replication.SLAVE_EVENT:                    {name: "SLAVE_EVENT", what: "never written by a server"},
	replication.BEGIN_LOAD_QUERY_EVENT:         {name: "BEGIN_LOAD_QUERY_EVENT", what: "the first block of a LOAD DATA's file; the EXECUTE_LOAD_QUERY_EVENT after it is the statement, which the stream acts on"},
	replication.APPEND_BLOCK_EVENT:             {name: "APPEND_BLOCK_EVENT", what: "a further block of a LOAD DATA's file; the event that loads it is the statement, which the stream acts on"},
	replication.CREATE_FILE_EVENT:              {name: "CREATE_FILE_EVENT", what: "the first block of a LOAD DATA's file (MySQL 4); the EXEC_LOAD_EVENT that loads it stops the stream"},
	replication.DELETE_FILE_EVENT:              {name: "DELETE_FILE_EVENT", what: "a LOAD DATA that failed: its file is discarded"},
	replication.IGNORABLE_EVENT:                {name: "IGNORABLE_EVENT", what: "an event a replica may ignore"},
	replication.ROWS_QUERY_EVENT:               {name: "ROWS_QUERY_EVENT", what: "the text of the statement whose row events follow (binlog_rows_query_log_events)"},
	replication.TRANSACTION_CONTEXT_EVENT:      {name: "TRANSACTION_CONTEXT_EVENT", what: "group replication's certification data of a transaction"},
	replication.VIEW_CHANGE_EVENT:              {name: "VIEW_CHANGE_EVENT", what: "group replication's change of members"},
	replication.MARIADB_ANNOTATE_ROWS_EVENT:    {name: "ANNOTATE_ROWS_EVENT", what: "the text of the statement whose row events follow (binlog_annotate_row_events)"},
	replication.MARIADB_START_ENCRYPTION_EVENT: {name: "START_ENCRYPTION_EVENT", what: "the binlog file is encrypted from here (the server decrypts what it sends)"},

	replication.LOAD_EVENT:      {name: "LOAD_EVENT", what: "a LOAD DATA as servers before MySQL 5.0 wrote it: its rows are in a file, not in row events", stop: true, fix: fixLoad},
	replication.NEW_LOAD_EVENT:  {name: "NEW_LOAD_EVENT", what: "a LOAD DATA as servers before MySQL 5.0 wrote it: its rows are in a file, not in row events", stop: true, fix: fixLoad},
	replication.EXEC_LOAD_EVENT: {name: "EXEC_LOAD_EVENT", what: "a LOAD DATA as MySQL 4 wrote it: its rows are in a file, not in row events", stop: true, fix: fixLoad},
	mariadbWriteRowsCompressed:  {name: "WRITE_ROWS_COMPRESSED_EVENT", what: "MariaDB's compressed rows event of version 2, which binlog2ch does not decode", stop: true, fix: fixCompressed},
	mariadbUpdateRowsCompressed: {name: "UPDATE_ROWS_COMPRESSED_EVENT", what: "MariaDB's compressed rows event of version 2, which binlog2ch does not decode", stop: true, fix: fixCompressed},
	mariadbDeleteRowsCompressed: {name: "DELETE_ROWS_COMPRESSED_EVENT", what: "MariaDB's compressed rows event of version 2, which binlog2ch does not decode", stop: true, fix: fixCompressed},
}

// What to change on the source for the types that stop.
const (
	fixLoad       = "A server writes it for LOAD DATA in a session with binlog_format STATEMENT or MIXED: set binlog_format = ROW."
	fixCompressed = "Turn the source's binlog compression off (log_bin_compress = OFF)."
)

// incidentLostEvents is MySQL's INCIDENT_LOST_EVENTS, the one incident
// servers write.
const incidentLostEvents = 1

// passBy acts on an event the switch does not: a heartbeat or a harmless
// event goes by (the latter counted, and logged the first time its type
// comes), anything else stops the stream.
func (s *Stream) passBy(ev *replication.BinlogEvent, heartbeat bool) error {
	hd := ev.Header
	if heartbeat {
		return nil
	}
	if hd.EventType == replication.INCIDENT_EVENT {
		return fatalError{&IncidentError{At: s.pos, Incident: incidentText(ev.RawData)}}
	}
	p, known := passedByTypes[hd.EventType]
	if !known {
		if hd.Flags&replication.LOG_EVENT_IGNORABLE_F == 0 {
			return fatalError{fmt.Errorf("binlog %s: an event of type %d, which binlog2ch does not know (from a server newer than it supports?), without the flag that lets a replica ignore it: it may change rows that ClickHouse would then lack, and a MySQL replica stops on it too. Check what the source is and what wrote this event (mysqlbinlog --start-position=%d %s); an event that changed no replicated table can be passed with `binlog2ch fullsync -recreate -checkpoint`, which copies every table and moves the checkpoint past it",
				s.pos, hd.EventType, s.pos.Pos, s.pos.File)}
		}
		p = passedBy{name: "UNKNOWN_" + strconv.Itoa(int(hd.EventType)), what: "an event type binlog2ch does not know, flagged as one a replica may ignore"}
	}
	if p.stop {
		return fatalError{fmt.Errorf("binlog %s: %s (%s): binlog2ch cannot apply it, and the tables it changed (it does not say which) would miss those changes in ClickHouse. %s Then make ClickHouse equal again and go on past this event with `binlog2ch fullsync -recreate -checkpoint` (it copies every table and moves the checkpoint past it; a restart alone stops here again)",
			s.pos, p.name, p.what, p.fix)}
	}
	if s.EventsSkipped != nil {
		s.EventsSkipped.WithLabelValues(p.name).Inc()
	}
	if s.passed == nil {
		s.passed = map[string]bool{}
	}
	if !s.passed[p.name] {
		s.passed[p.name] = true
		s.log.Info("binlog event passed by: it changes no rows (counted in binlog2ch_events_skipped_total; logged for its type's first event only)",
			"type", p.name, "event", p.what, "binlog", s.pos.String())
	}
	s.advance(hd)
	return nil
}

// IncidentError: the source wrote an INCIDENT_EVENT, which a server
// writes when changes may be missing from its binlog (a statement that
// failed half-way on a non-transactional table, a binlog write that
// failed): a MySQL replica stops on it, and so does binlog2ch.
type IncidentError struct {
	At       Position
	Incident string // its number and message, as far as they could be read
}

func (e *IncidentError) Error() string {
	return fmt.Sprintf("binlog %s: the source wrote an incident event (%s): changes may be missing from its binlog, so ClickHouse may lack them in any table (the event does not say which), and a MySQL replica stops here too. Find what happened on the source at that time (its error log); then compare the tables (`binlog2ch verify`) and make ClickHouse equal again: `binlog2ch fullsync -recreate -checkpoint` copies every table and moves the checkpoint past this event (a restart alone stops here again)",
		e.At, e.Incident)
}

// incidentText reads an INCIDENT_EVENT (MySQL's Incident_event): the
// incident's number in the 2-byte post-header, then its message, at most
// 255 bytes after a length byte. A checksum after it is never read.
func incidentText(raw []byte) string {
	if len(raw) < replication.EventHeaderSize+2 {
		return "unreadable: the event is too short"
	}
	body := raw[replication.EventHeaderSize:]
	n := binary.LittleEndian.Uint16(body)
	text := "incident " + strconv.Itoa(int(n))
	if n == incidentLostEvents {
		text = "LOST_EVENTS"
	}
	if len(body) > 2 {
		l := int(body[2])
		if msg := body[3:]; l <= len(msg) {
			text += ": " + strconv.Quote(string(msg[:l]))
		}
	}
	return text
}

// executeLoadQuery hands on the LOAD DATA statement an
// EXECUTE_LOAD_QUERY_EVENT carries (a session with binlog_format
// STATEMENT or MIXED; the file's rows came in BEGIN_LOAD_QUERY and
// APPEND_BLOCK events before it) as a statement changing rows without row
// events, as an INSERT logged as a statement is.
func (s *Stream) executeLoadQuery(ctx context.Context, ev *replication.BinlogEvent, e *replication.ExecuteLoadQueryEvent, h Handler) error {
	db, q, err := s.loadQueryText(ev.RawData, e)
	if err != nil {
		return fatalError{fmt.Errorf("binlog %s: a LOAD DATA statement (EXECUTE_LOAD_QUERY_EVENT) that binlog2ch cannot read: %w. It changed rows without row events; copy the tables again with `binlog2ch fullsync -recreate -checkpoint`, which moves the checkpoint past it", s.pos, err)}
	}
	return s.statement(ctx, db, q, h)
}

// loadQueryText reads the schema and the statement of an
// EXECUTE_LOAD_QUERY_EVENT (MySQL's Execute_load_query_event; MariaDB
// writes the same): a query event's post-header and its own (file id, the
// file name's offsets in the statement, duplicate handling), the status
// variables, the schema and a NUL, then the statement to the event's end
// (its checksum removed). go-mysql decodes the post-headers only.
func (s *Stream) loadQueryText(raw []byte, e *replication.ExecuteLoadQueryEvent) (db, q string, err error) {
	if len(raw) < replication.EventHeaderSize {
		return "", "", errors.New("shorter than an event header")
	}
	body := raw[replication.EventHeaderSize:]
	// Inside a compressed transaction events have no checksums.
	if p := s.payload; s.checksum && (p == nil || s.pos != p.start) {
		if len(body) < replication.BinlogChecksumLength {
			return "", "", errors.New("shorter than its checksum")
		}
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	post := 26 // 13 bytes of a query event's post-header, 13 of its own
	if f := s.format; f != nil && len(f.EventTypeHeaderLengths) >= int(replication.EXECUTE_LOAD_QUERY_EVENT) {
		post = int(f.EventTypeHeaderLengths[replication.EXECUTE_LOAD_QUERY_EVENT-1])
	}
	start := post + int(e.StatusVars)
	end := start + int(e.SchemaLength)
	if end >= len(body) || body[end] != 0 {
		return "", "", fmt.Errorf("its schema (%d bytes after %d of status variables) does not fit its %d bytes", e.SchemaLength, e.StatusVars, len(body))
	}
	return string(body[start:end]), string(body[end+1:]), nil
}
