package snapshot

import (
	"context"
	"errors"
	"fmt"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/mysqlproto"
)

// readPool holds the MySQL connections of the readers and the key walks
// (mysqlproto: rows are handed to the writers undecoded) and the buffers
// their batches of rows travel in.
type readPool struct {
	opts  mysqlproto.Options
	conns chan *mysqlproto.Conn
	bufs  chan []byte
}

// batchBytes is about how many bytes of rows a reader hands the writer at
// once: enough that a message's cost is spread over many rows, few enough
// that the queues hold little (a row larger than this comes alone).
const batchBytes = 1 << 20

// newReadPool opens the pool of `workers` readers, checking that the
// server takes a connection (a copy whose every table would fail fails at
// once instead).
func newReadPool(ctx context.Context, cfg *config.Config, workers int) (*readPool, error) {
	p := &readPool{
		opts: mysqlproto.Options{
			Addr: cfg.MySQL.Addr, User: cfg.MySQL.User, Password: cfg.MySQL.Password.Reveal(), TLS: cfg.MySQLTLS(),
			// TIMESTAMPs in UTC. A reader waits while its table's writer is
			// blocked on ClickHouse: the server must not drop the
			// half-sent result meanwhile.
			Session: []string{"SET time_zone = '+00:00', net_write_timeout = 3600"},
		},
		conns: make(chan *mysqlproto.Conn, workers),
		// Per table at most the writer's queue, the batch it decodes and
		// one a reader fills, for up to `workers` tables.
		bufs: make(chan []byte, 6*workers),
	}
	c, err := p.conn(ctx)
	if err != nil {
		return nil, err
	}
	p.release(c)
	return p, nil
}

// conn returns an idle connection or a new one.
func (p *readPool) conn(ctx context.Context) (*mysqlproto.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	default:
	}
	c, err := mysqlproto.Dial(ctx, p.opts)
	if err != nil {
		return nil, fmt.Errorf("MySQL %s as %s: %w", p.opts.Addr, p.opts.User, err)
	}
	return c, nil
}

// release keeps a connection that can take another command, and closes
// any other.
func (p *readPool) release(c *mysqlproto.Conn) {
	if c.Usable() {
		select {
		case p.conns <- c:
			return
		default:
		}
	}
	c.Close()
}

// buf returns an empty batch buffer.
func (p *readPool) buf() []byte {
	select {
	case b := <-p.bufs:
		return b[:0]
	default:
		return make([]byte, 0, batchBytes+batchBytes/4)
	}
}

// recycle takes back a buffer the writer is done with; one grown by a
// large row is left to the collector.
func (p *readPool) recycle(b []byte) {
	if cap(b) > 2*batchBytes {
		return
	}
	select {
	case p.bufs <- b:
	default:
	}
}

// close closes the idle connections.
func (p *readPool) close() {
	for {
		select {
		case c := <-p.conns:
			c.Close()
		default:
			return
		}
	}
}

// mysqlProtoTransient classifies the server's errors on the readers'
// connections (an ERR packet, or a refused login) by their code; ok is
// false for any other error.
func mysqlProtoTransient(err error) (transient, ok bool) {
	var code uint16
	var se *mysqlproto.ServerError
	var me *gomysql.MyError
	switch {
	case errors.As(err, &se):
		code = se.Code
	case errors.As(err, &me): // refused at login
		code = me.Code
	default:
		return false, false
	}
	return transientCode(code), true
}
