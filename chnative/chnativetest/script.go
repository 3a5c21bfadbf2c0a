package chnativetest

import (
	"strconv"
)

// What a test scripts: how the server behaves (Script), the packets it
// sends (Packet and its constructors), and what it records of a client's
// INSERTs (Insert, Block).

// Column is a block's column: its name and type.
type Column struct{ Name, Type string }

// Exception is an error the server reports.
type Exception struct {
	Code          int32
	Name, Message string
}

// Script is how the server behaves.
type Script struct {
	// Name, version and protocol revision, as the hello gives them.
	Name                string // "ClickHouse" when empty
	Major, Minor, Patch uint64
	Revision            uint64
	Timezone            string
	DisplayName         string
	// User and Password, when User is set, are the only credentials the
	// server accepts.
	User, Password string
	// Compression is the method byte of the server's compressed blocks
	// (when the client's query asks for compression; without, they go
	// plain, as a server's do), as network_compression_method sets it: MethodLZ4 (also when 0),
	// MethodZSTD or MethodNone. Any other byte goes out in an otherwise
	// valid frame, as a method a client does not know.
	Compression byte
	// Settings are the query settings the server knows, each with its
	// type as system.settings names it (Bool, UInt64, Int64, Float,
	// String, ...; the type decides how the old binary format carries it).
	Settings map[string]string
	// ValidateClientInfo: the server checks that the client name and
	// version in each query's client info are the hello's (the server
	// setting validate_tcp_client_information, from 23.8).
	ValidateClientInfo bool
	// Header gives an INSERT's header columns from its query. Nil: the
	// query's column list, each column UInt32.
	Header func(query string) []Column
	// BeforeHeader go out after the query (and TableColumns, as servers
	// send it), before the header block.
	BeforeHeader []Packet
	// AfterData go out once the client's data has been read, before the
	// end of the stream.
	AfterData []Packet
	// Forward, when set, is a real ClickHouse's HTTP address (host:port,
	// with ForwardUser and ForwardPassword): once an INSERT's data is in
	// and accepted, the server stores it there with the client's query id
	// before it sends AfterData, so that a surprise after the data follows
	// a block that really landed, as it may on a real server.
	Forward                      string
	ForwardUser, ForwardPassword string
	// Fail, when set, ends the insert with this exception instead of
	// EndOfStream: once the client's data is in (FailAfterBlocks 0), or
	// after that many data blocks, the rest skipped as the server does.
	Fail            *Exception
	FailAfterBlocks int
	// DedupByToken: the server deduplicates as a 22.2+ one does with
	// insert_deduplication_token on a table that keeps a deduplication
	// window: an insert whose non-empty token the server already stored
	// for the same table is acknowledged and not stored (not forwarded);
	// a token is kept once its insert is stored.
	DedupByToken bool
}

// Packet is one server packet a script sends.
type Packet struct {
	name  string
	write func(s *session) bool // false: not sent at this revision
}

// Progress is a Progress packet, its fields written as a server writes
// them for the client's revision (ProgressValues::write): read rows and
// bytes, total rows, then total bytes (54463), written rows and bytes
// (54420), elapsed nanoseconds (54460).
func Progress(readRows, readBytes, totalRows, writtenRows, writtenBytes uint64) Packet {
	return Packet{"Progress", func(s *session) bool {
		s.uvarint(serverProgress)
		s.uvarint(readRows)
		s.uvarint(readBytes)
		s.uvarint(totalRows)
		if s.rev >= revTotalBytesInProgress {
			s.uvarint(0)
		}
		if s.rev >= revClientWrite {
			s.uvarint(writtenRows)
			s.uvarint(writtenBytes)
		}
		if s.rev >= revQueryTimeInProgress {
			s.uvarint(1000)
		}
		return true
	}}
}

// Log is a Log packet with one message, as a server sends its log to a
// client that asked for it (send_logs_level), from revision 54406: an
// uncompressed block.
func Log(text string) Packet {
	return Packet{"Log", func(s *session) bool {
		if s.rev < revServerLogs {
			return false
		}
		s.uvarint(serverLog)
		s.str("")
		var b blockWriter
		b.header(s.rev, 8, 1)
		b.column("event_time", "DateTime", []byte{1, 2, 3, 4})
		b.column("event_time_microseconds", "UInt32", []byte{5, 6, 7, 8})
		b.column("host_name", "String", stringValue("host"))
		b.column("query_id", "String", stringValue("q"))
		b.column("thread_id", "UInt64", make([]byte, 8))
		b.column("priority", "Int8", []byte{6})
		b.column("source", "String", stringValue("executeQuery"))
		b.column("text", "String", stringValue(text))
		s.w.Write(b.Bytes())
		return true
	}}
}

// ProfileEvents is a ProfileEvents packet as a server sends it: only to a
// client at revision 54451 or later (54456 during an INSERT). To an older
// client the server sends nothing, and neither does this.
func ProfileEvents() Packet {
	return Packet{"ProfileEvents", func(s *session) bool {
		if s.rev < revProfileEventsInInsert {
			return false
		}
		s.uvarint(serverProfileEvents)
		s.str("")
		var b blockWriter
		b.header(s.rev, 2, 1)
		b.column("name", "String", stringValue("InsertedRows"))
		b.column("value", "Int64", make([]byte, 8))
		s.w.Write(b.Bytes())
		return true
	}}
}

// TimezoneUpdate is a TimezoneUpdate packet: only to a client at revision
// 54464 or later.
func TimezoneUpdate(tz string) Packet {
	return Packet{"TimezoneUpdate", func(s *session) bool {
		if s.rev < revTimezoneUpdates {
			return false
		}
		s.uvarint(serverTimezoneUpdate)
		s.str(tz)
		return true
	}}
}

// Raw is a packet of type kind with body as is, whatever the client's
// revision: a server that breaks the protocol, for a client to refuse.
func Raw(kind uint64, body []byte) Packet {
	return Packet{"packet " + strconv.FormatUint(kind, 10), func(s *session) bool {
		s.uvarint(kind)
		s.w.Write(body)
		return true
	}}
}

// Block is a data block a client sent: its columns, rows and each
// column's data as it came.
type Block struct {
	Columns []Column
	Rows    int
	Data    [][]byte
	// Method is the method byte of the block's first frame, 0 when the
	// query turned compression off.
	Method byte
}

// Insert is what a client sent for one INSERT.
type Insert struct {
	Query   string
	QueryID string // the client's, "" to let the server assign one
	// Hello and ClientInfo are the client's name, major.minor and
	// revision in its hello and in the query's client info.
	Hello, ClientInfo string
	// InitialAddress is the client info's initial address.
	InitialAddress string
	// Settings are the settings the server knew, with their values (the
	// varint, or the string of a string-typed one); Unknown those it did
	// not, skipped as strings.
	Settings map[string]string
	Unknown  []string
	// Compressed is the query's compression flag: on, both sides' blocks
	// travel in frames; off, as plain Native.
	Compressed bool
	// Header is what the server sent as the INSERT's header.
	Header []Column
	Blocks []Block
	// Sent names the packets the script sent, Withheld those it did not
	// at the client's revision.
	Sent, Withheld []string
	// Completed: the server read the whole insert and answered it
	// (EndOfStream or the script's exception).
	Completed bool
	// Forwarded: the data went to Script.Forward, which stored it.
	Forwarded bool
	// Deduplicated: the insert's token was seen for its table before
	// (Script.DedupByToken), so it was acknowledged and not stored.
	Deduplicated bool
}
