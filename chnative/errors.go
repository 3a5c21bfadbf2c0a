package chnative

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Reasons for a ProtocolError, also the values of the
// binlog2ch_native_fallbacks_total metric's reason label.
const (
	// ReasonUnknownPacket: a packet type the server may not send at the
	// revision spoken, or one whose body this client cannot read.
	ReasonUnknownPacket = "unknown_packet"
	// ReasonCompression: a frame compressed with a method this client
	// does not know, or one it cannot decode.
	ReasonCompression = "compression"
	// ReasonHeaderType: an INSERT's header block that is not a list of
	// column names and type names.
	ReasonHeaderType = "header_type"
)

// ProtocolError is an answer from the server this client cannot follow: a
// packet, compression method or block format it does not know. Nothing
// after it can be read, so the connection must be closed; the insert
// should go through a driver that speaks the server's current protocol.
type ProtocolError struct {
	Reason string // one of the Reason constants
	// DataSent: the block was sent whole before the surprise, so the
	// server may have stored it; the insert's outcome is unknown.
	DataSent bool
	// QueryID is the insert's query id when DataSent (system.processes'
	// query_id while the server runs it).
	QueryID string
	Err     error
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("native protocol surprise (%s): %v", e.Reason, e.Err)
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// newQueryID is a random query id in the UUID form servers assign.
func newQueryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Exception is an error the server reported.
type Exception struct {
	Code    int32
	Name    string
	Message string
	Stack   string
	Nested  *Exception
}

func (e *Exception) Error() string {
	return fmt.Sprintf("code: %d, message: %s", e.Code, strings.TrimPrefix(e.Message, e.Name+": "))
}

func (c *Conn) readException() error {
	var first, last *Exception
	for {
		var code [4]byte
		if _, err := io.ReadFull(c.r, code[:]); err != nil {
			return err
		}
		e := &Exception{Code: int32(binary.LittleEndian.Uint32(code[:]))}
		var err error
		if e.Name, err = c.readString(); err != nil {
			return err
		}
		if e.Message, err = c.readString(); err != nil {
			return err
		}
		if e.Stack, err = c.readString(); err != nil {
			return err
		}
		nested, err := c.r.ReadByte()
		if err != nil {
			return err
		}
		if first == nil {
			first = e
		} else {
			last.Nested = e
		}
		last = e
		if nested == 0 {
			return first
		}
	}
}
