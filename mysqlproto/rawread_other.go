//go:build !linux

package mysqlproto

import (
	"net"
	"sync/atomic"
)

// rawReader is Linux's; elsewhere reads go through net.Conn.Read.
type rawReader struct{}

func newRawReader(net.Conn, *atomic.Bool) *rawReader { return nil }

func (*rawReader) Read([]byte) (int, error)      { panic("unreachable") }
func (*rawReader) ReadBatch([]byte) (int, error) { panic("unreachable") }
