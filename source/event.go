package source

import (
	"context"
	"fmt"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Handler is what a Stream hands the binlog's events to, in binlog order,
// from the Stream's goroutine. An error it returns stops the stream.
type Handler interface {
	// Event comes first for every event read, heartbeats included.
	Event(e Event)
	// Rows is one rows event of a selected table.
	Rows(ctx context.Context, r Rows) error
	// Statement is a statement outside a transaction (DDL); a Commit
	// follows it.
	Statement(ctx context.Context, st Statement) error
	// Commit is a transaction boundary: resuming at its position replays
	// no partial transaction.
	Commit(c Commit)
	// Tick comes after every event, and whenever Wake interrupted the wait
	// for one. When again > 0, the handler wants another Tick that soon
	// even if no event comes.
	Tick(woken bool) (again time.Duration, err error)
	// Down says the connection failed with err; the stream reconnects at
	// resume after retryIn.
	Down(err error, resume Position, retryIn time.Duration)
}

// Event is what every event tells: the stream is alive, and how current.
type Event struct {
	// Heartbeat: the server has nothing newer to send.
	Heartbeat bool
	// Timestamp is the event's commit time (Unix ns); 0 when it has none
	// (the events a server sends at connect).
	Timestamp int64
}

// Rows is one rows event of a selected table.
type Rows struct {
	Table  schema.TableName
	Schema *schema.Table // as the event's table map describes it
	Op     Op
	Rows   [][]any        // decoded by go-mysql, when Raw is nil
	Raw    binlog.RawRows // the row images undecoded (see binlog.RowsDecoder)
	// Lease, with Raw, is the event buffer Raw lies in: the writer that
	// takes the rows frees it. Whoever decodes Raw with Values, or keeps
	// the rows past the writer, zeroes it in its copy first: the values
	// point into the buffer.
	Lease binlog.Lease
	// Version is the _version of the event's first row; Versions is how
	// many distinct versions its rows get: row i has Version +
	// min(i, Versions-1) (see RowVersion).
	Version  uint64
	Versions int
	At       Position
	// Flags are the rows event's flags (RowsNoForeignKeyChecks,
	// RowsSQLForeignKeys).
	Flags uint16
	// Partial, when set, says which columns the rows hold: written with
	// binlog_row_image NOBLOB or MINIMAL, the others are nil in Rows
	// (images.go). Readers check what they need with Need.
	Partial *Images
	// decode decodes Raw with go-mysql (Values).
	decode func() ([][]any, error)
}

// Rows event flags (MySQL's Rows_event::enum_flag; MariaDB writes the
// first).
const (
	// RowsNoForeignKeyChecks: written with foreign_key_checks=0, so the
	// server cascaded nothing.
	RowsNoForeignKeyChecks = 1 << 1
	// RowsSQLForeignKeys (USE_SQL_FOREIGN_KEY_F, MySQL 9.6+): the server
	// applied foreign keys above the storage engine, and wrote the rows
	// its cascades changed as row events of their own, before this one.
	RowsSQLForeignKeys = 1 << 4
)

// Values returns the event's rows as go-mysql decodes them (an UPDATE's
// alternate before and after images), decoding raw row images now.
func (r *Rows) Values() ([][]any, error) {
	if r.Raw == nil || r.decode == nil {
		return r.Rows, nil
	}
	return r.decode()
}

// Statement is a query event that is not a transaction marker.
type Statement struct {
	At   Position
	Text string
	// NonTableKind is the kind of a statement that changes no table (routine,
	// trigger, grant...; see ddl.NonTableKind), "" otherwise.
	NonTableKind string
	// Effects are what the statement does to tables: parsed, or when not
	// Parsed, what its words show (ddl.Unparsed).
	Effects []ddl.Effect
	// Parsed is false for a statement that may change a table but was
	// not understood.
	Parsed bool
}

// Commit is a transaction boundary.
type Commit struct {
	Position Position
	File     uint32 // Position.File's index
	// Resume is where a restart must read from: Position, or the start
	// of the oldest XA transaction prepared before it whose XA COMMIT or
	// ROLLBACK is not read yet.
	Resume Position
	// Prepared is how many such XA transactions there are.
	Prepared int
	// Timestamp is the timestamp (Unix ns) of the transaction's last event; 0
	// when unknown.
	Timestamp int64
	// GTID is the executed GTID set at Resume ("" when the server writes
	// no GTIDs), History identifies the binlog Resume is on.
	GTID    string
	History History
	// Offset is the history's version offset: F of Position's file is
	// VersionFile(File, Offset).
	Offset int64
}

// UnreadableError: the source cannot send the binlog from a position,
// usually because that file was purged. Reconnecting cannot fix it.
type UnreadableError struct {
	From Position
	Err  error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("the source cannot send the binlog from %s: %v", e.From, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Op is the kind of a rows event.
type Op int8

// The rows events.
const (
	OpInsert Op = iota + 1
	OpUpdate    // rows alternate before and after images
	OpDelete
)

// SameValue compares two values of a rows event's rows as go-mysql decodes
// them ([]byte by content).
func SameValue(a, b any) bool {
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	}
	return a == b
}
