// Package control is the running daemon's control channel: a unix socket
// in state_dir on which it takes requests from `binlog2ch resync` on the
// same host, and the client's side. It must not widen who can change the
// daemon: only the daemon's own user and root are served. It never
// touches MySQL or ClickHouse itself: it hands requests to its Daemon.
package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
)

// The control channel: a unix socket in state_dir on which the running
// daemon takes requests from `binlog2ch resync` on the same host. Only
// the daemon's own user and root may use it: the socket is 0600 in a
// state_dir of the daemon's, and on Linux the peer's uid is checked too
// (SO_PEERCRED). One JSON request line, one JSON response line.

// Socket is the control channel's socket in state_dir.
const Socket = "control.sock"

// maxControlRequest bounds a request line.
const maxControlRequest = 1 << 20

// controlTimeout bounds reading a request and writing its answer: a
// client that connects and says nothing must not hold a goroutine.
const controlTimeout = 30 * time.Second

// Request is a client's request.
type Request struct {
	// Op is what to do: "resync".
	Op string `json:"op"`
	// Tables are db.table names (resync).
	Tables []string `json:"tables,omitempty"`
}

// Response is the daemon's answer.
type Response struct {
	OK bool `json:"ok"`
	// Message says what the daemon did; Error why it did not.
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Daemon is what the control channel asks of the daemon.
type Daemon interface {
	Resync(ctx context.Context, tables []schema.TableName) error
}

// Serve listens on state_dir's control socket until the returned
// stop is called, which removes the socket. A socket left by a daemon
// that died is removed first; one another process answers on is an
// error. Run serves it with the daemon; the caller holds state_dir's lock.
func Serve(ctx context.Context, stateDir string, d Daemon, log *slog.Logger) (stop func(), err error) {
	path := filepath.Join(stateDir, Socket)
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("control socket: state_dir %s: %w", stateDir, err)
	}
	if _, err := os.Lstat(path); err == nil {
		if c, err := dial(ctx, path); err == nil {
			c.Close()
			return nil, fmt.Errorf("control socket %s: another process answers on it: one binlog2ch run per state_dir; stop the other one, or give this one a state_dir of its own", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("control socket %s: remove the stale socket: %w", path, err)
		}
		log.Info("control channel: removed a stale socket (a daemon that did not exit cleanly left it)", "path", path)
	}
	// Bound under another name, made 0600, then renamed into place: the
	// socket is never reachable with the umask's mode.
	tmp := filepath.Join(stateDir, "control.new")
	_ = os.Remove(tmp)
	var ln *net.UnixListener
	err = withSocketPath(tmp, func(addr string) error {
		var err error
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // it is removed by its final name below
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	log.Info("control channel listening (binlog2ch resync)", "socket", path)
	srvCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				if srvCtx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					log.Error("control channel: accept failed; binlog2ch resync cannot reach this daemon until it restarts", "error", err)
				}
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveConn(srvCtx, c, d, log)
			}()
		}
	}()
	go func() {
		<-srvCtx.Done()
		ln.Close()
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				log.Warn("control socket not removed", "path", path, "error", err)
			}
		})
	}, nil
}

func serveConn(ctx context.Context, c *net.UnixConn, d Daemon, log *slog.Logger) {
	defer c.Close()
	// A request still being handled when the daemon stops is answered
	// with its context's error.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(controlTimeout))
	answer := func(resp Response) {
		line, _ := json.Marshal(resp)
		_ = c.SetWriteDeadline(time.Now().Add(controlTimeout))
		_, _ = c.Write(append(line, '\n'))
	}
	uid, checked, err := peerUID(c)
	if err != nil {
		log.Warn("control channel: cannot tell the peer's uid; refused", "error", err)
		answer(Response{Error: "refused: the daemon cannot tell who is asking: " + err.Error()})
		return
	}
	if me := os.Geteuid(); checked && uid != me && uid != 0 {
		log.Warn("control channel: refused a peer of another user", "peer_uid", uid, "daemon_uid", me)
		answer(Response{Error: fmt.Sprintf("refused: the control channel is for the daemon's user (uid %d) and root; you are uid %d. Run binlog2ch resync as the daemon's user (sudo -u ...)", me, uid)})
		return
	}
	req, err := readRequest(c)
	if err != nil {
		answer(Response{Error: "bad request: " + err.Error()})
		return
	}
	switch req.Op {
	case "resync":
		tables, err := ParseTableNames(req.Tables)
		if err == nil && len(tables) == 0 {
			err = errors.New("no tables: name each table to copy again as db.table")
		}
		if err != nil {
			answer(Response{Error: "resync: " + err.Error()})
			return
		}
		log.Info("control channel: resync requested", "tables", req.Tables, "peer_uid", uid)
		if err := d.Resync(ctx, tables); err != nil {
			log.Error("control channel: resync refused", "tables", req.Tables, "error", err)
			answer(Response{Error: err.Error()})
			return
		}
		answer(Response{OK: true, Message: fmt.Sprintf("queued %d table(s) for an online copy: %s", len(tables), strings.Join(req.Tables, ", "))})
	default:
		answer(Response{Error: fmt.Sprintf("unknown op %q: this daemon knows resync", req.Op)})
	}
}

func readRequest(r io.Reader) (Request, error) {
	var req Request
	line, err := bufio.NewReader(io.LimitReader(r, maxControlRequest)).ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return req, fmt.Errorf("want one JSON line ending in a newline, of at most %d bytes", maxControlRequest)
		}
		return req, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("not a JSON request: %w", err)
	}
	return req, nil
}

// ParseTableNames parses db.table names.
func ParseTableNames(names []string) ([]schema.TableName, error) {
	var out []schema.TableName
	for _, s := range names {
		t, ok := schema.ParseTableName(strings.TrimSpace(s))
		if !ok {
			return nil, fmt.Errorf("want db.table, got %q", s)
		}
		out = append(out, t)
	}
	return out, nil
}

// Send sends one request to the daemon serving stateDir's control
// socket and returns its answer. ctx bounds the whole exchange.
func Send(ctx context.Context, stateDir string, req Request) (*Response, error) {
	path := filepath.Join(stateDir, Socket)
	c, err := dial(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// A daemon that refuses the peer answers without reading the request:
	// its answer is read even when the write failed.
	_, werr := c.Write(append(line, '\n'))
	answer, err := bufio.NewReader(io.LimitReader(c, maxControlRequest)).ReadBytes('\n')
	if err != nil && werr != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, werr)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("control socket %s: no answer: %w", path, err)
	}
	var resp Response
	if err := json.Unmarshal(answer, &resp); err != nil {
		return nil, fmt.Errorf("control socket %s: the answer is not JSON: %w", path, err)
	}
	return &resp, nil
}

func dial(ctx context.Context, path string) (net.Conn, error) {
	var c net.Conn
	err := withSocketPath(path, func(addr string) error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "unix", addr)
		return err
	})
	return c, err
}
