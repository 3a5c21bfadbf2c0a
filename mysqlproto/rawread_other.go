//go:build !linux

package mysqlproto

import "net"

// rawReader is Linux's; elsewhere reads go through net.Conn.Read.
type rawReader struct{}

func newRawReader(net.Conn) *rawReader { return nil }

func (*rawReader) Read([]byte) (int, error) { panic("unreachable") }
