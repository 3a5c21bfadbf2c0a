package replicator

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestCopySwappedAfterItsWindow: an online copy that finishes while the
// stream is still behind the server waits, before it is swapped in, until
// the stream has read up to the server's position at the copy's end. Two
// ON UPDATE CASCADEs, the second moving children into the key value the
// first released, run while the copy waits to read the child table, and
// the copy reads the child after both; the stream is held before them
// until the copy is done. Swapped in then, the cascades read afterwards
// would be derived on the copy's rows, which MySQL had already changed,
// and move the wrong children; read while the batch waits, they start
// it over.
func TestCopySwappedAfterItsWindow(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 20, workers: 1}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".parent (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE "+a+".other (id INT PRIMARY KEY)",
		"CREATE TABLE "+a+".skip_child (id INT PRIMARY KEY, parent_id INT, v VARCHAR(20), FOREIGN KEY (parent_id) REFERENCES parent (id) ON UPDATE CASCADE)")
	h.fill(a, "parent", 4)
	var vals []string
	for i := 1; i <= 80; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 'c%d')", i, (i-1)/20+1, i))
	}
	h.exec("INSERT INTO " + a + ".skip_child VALUES " + strings.Join(vals, ", "))

	copyHeld, copyGo := make(chan struct{}), make(chan struct{})
	streamHeld, streamGo := make(chan struct{}), make(chan struct{})
	copied := make(chan struct{})
	var chunks, copies atomic.Int64
	var holdStream atomic.Bool
	run := h.startWith(testHooks{
		beforeChunk: func(ctx context.Context, table schema.TableName) {
			if table.Table == "skip_child" && chunks.Add(1) == 1 {
				close(copyHeld) // the first copy, before it reads a row
				select {
				case <-copyGo:
				case <-ctx.Done():
				}
			}
		},
		rowsEvent: func(table schema.TableName) {
			if table.Table == "other" && holdStream.CompareAndSwap(true, false) {
				close(streamHeld)
				<-streamGo
			}
		},
		copyDone: func([]schema.TableName) {
			if copies.Add(1) == 1 {
				close(copied)
			}
		},
	})
	h.waitCaughtUp(run, 30*time.Second)
	if err := run.r.Reload(config.TablesConfig{Include: []string{a + ".*"}}); err != nil {
		t.Fatal(err)
	}
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("%s:\n%s", what, tail(run.logs.String(), 3000))
		}
	}
	wait(copyHeld, "the copy did not start")
	holdStream.Store(true)
	h.exec("INSERT INTO "+a+".other VALUES (1)",
		"UPDATE "+a+".parent SET id = 100 WHERE id = 1", // children of 1 move to 100
		"UPDATE "+a+".parent SET id = 1 WHERE id = 2")   // children of 2 move to the 1 released
	wait(streamHeld, "the stream did not reach the row before the cascades")
	close(copyGo) // the copy reads the children as both cascades left them
	wait(copied, "the copy did not finish")
	close(streamGo)
	h.waitCaughtUp(run, 30*time.Second)
	h.waitCopied(run, time.Minute)
	h.cfg.Tables.Exclude = nil
	h.verifyEqual("parent", "other", "skip_child")
	if copies.Load() < 2 {
		t.Errorf("the copy was swapped in without starting over at the cascades of its window (%d copies):\n%s", copies.Load(), tail(run.logs.String(), 3000))
	}
}
