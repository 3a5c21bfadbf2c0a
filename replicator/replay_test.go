package replicator

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/schema"
)

// envCheckpointLastAtRows=N makes a child's reader, at the Nth rows event
// of a replicated table, wait until every earlier one is taken by its
// writer and no writer has a full batch unsent, let one checkpoint be
// saved, and save none after it: what the writers store from there on is
// replayed at the next start.
const envCheckpointLastAtRows = "BINLOG2CH_TEST_CHECKPOINT_LAST_AT_ROWS"

// pauseAfterRows sets the hooks of envPauseAfterRows and
// envCheckpointLastAtRows. Once the reader is held, the child logs "test
// pause: stored" when every rows event read has been taken by its writer
// and no writer has a full batch unsent: all a test kills then is each
// table's batch that is not full.
func pauseAfterRows(r *Replicator, log *slog.Logger) error {
	pause, last := int64(-1), int64(-1)
	for env, to := range map[string]*int64{envPauseAfterRows: &pause, envCheckpointLastAtRows: &last} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", env, err)
			}
			*to = n
		}
	}
	if pause < 0 && last < 0 {
		return nil
	}
	var armed, held atomic.Bool
	r.hooks.holdCheckpoint = func() bool {
		if held.Load() {
			return true
		}
		if armed.Load() {
			held.Store(true) // this one is saved
			log.Info("test pause: the last checkpoint")
		}
		return false
	}
	var seen atomic.Int64
	var once sync.Once
	r.hooks.rowsEvent = func(t schema.TableName) {
		n := seen.Add(1)
		if n == last {
			for !stored(r, t) {
				time.Sleep(5 * time.Millisecond)
			}
			// The reader ticks after each event: past the interval, the
			// tick after this one saves.
			time.Sleep(r.cfg.Checkpoint.Interval + time.Millisecond)
			armed.Store(true)
		}
		if pause >= 0 && n > pause {
			once.Do(func() {
				log.Info("test pause: reader held", "rows_events", n-1)
				go reportStored(r, t, log)
			})
			select {} // until the test kills the process
		}
	}
	return nil
}

// stored reports whether t's writer has taken every rows event sent and
// holds no full batch unsent.
func stored(r *Replicator, t schema.TableName) bool {
	s := r.running.Load()
	return s != nil && s.QueuedBytes() == 0 && r.m.ForTable(t).State().Queued < int64(r.cfg.Batch.MaxRows)
}

// reportStored logs "test pause: stored" once stored(t).
func reportStored(r *Replicator, t schema.TableName, log *slog.Logger) {
	for !stored(r, t) {
		time.Sleep(5 * time.Millisecond)
	}
	log.Info("test pause: stored")
}

// TestNoReplayedDuplicates SIGKILLs the daemon (a child process) five
// times during a catch-up into a Replicated table, each time after
// batches were stored past the last checkpoint it saved, and checks that
// no replay left a second copy of a row: without FINAL, the table counts
// the rows MySQL has plus one per genuine change (an update's new
// version, a delete's tombstone). The checkpoint's record of how far the
// table was stored makes each restart's batches those of the run before
// (batches are cut by size here: 5 rows events of 10 rows), and
// ClickHouse's block hashes drop the ones sent again.
func TestNoReplayedDuplicates(t *testing.T) {
	// Merges would collapse versions and duplicates alike: the counts
	// below are of what the inserts left.
	h, cl := newClusterHarnessConfig(t, 1, 1, localserver.NoMerges, nil, func(*localserver.Cluster) string {
		return "batch: {max_rows: 50, flush_interval: 1h, live_flush_interval: 1h}\ncheckpoint: {interval: 10ms}\n"
	})
	db := h.dbs[0]
	node := openCH(t, cl.Shards[0][0])
	h.exec(fmt.Sprintf("CREATE TABLE `%s`.r (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(40) NOT NULL)", db))
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	h.waitCaughtUpProcess(d, logPath, time.Minute)
	stopDaemon(t, d)

	// Transactions of 7 rows events of 10 rows: a batch (5 events) mostly
	// ends inside a transaction, where no checkpoint can be.
	const rowsPerEvent, eventsPerTx = 10, 7
	id := 0
	var stmts []string
	for tx := 0; tx < 40; tx++ {
		stmts = append(stmts, "BEGIN")
		for e := 0; e < eventsPerTx; e++ {
			var vals []string
			for i := 0; i < rowsPerEvent; i++ {
				id++
				vals = append(vals, fmt.Sprintf("(%d, %d, 'row %d')", id, id*7, id))
			}
			stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.r VALUES %s", db, strings.Join(vals, ", ")))
		}
		stmts = append(stmts, "COMMIT")
	}
	inserted := id
	updated := 0
	for tx := 0; tx < 4; tx++ {
		stmts = append(stmts, "BEGIN")
		for e := 0; e < eventsPerTx; e++ {
			lo := updated + 1
			updated += rowsPerEvent
			stmts = append(stmts, fmt.Sprintf("UPDATE `%s`.r SET v = v + 1, s = CONCAT(s, ' updated') WHERE id BETWEEN %d AND %d", db, lo, updated))
		}
		stmts = append(stmts, "COMMIT")
	}
	deleted := 2 * rowsPerEvent
	stmts = append(stmts, "BEGIN",
		fmt.Sprintf("DELETE FROM `%s`.r WHERE id BETWEEN %d AND %d", db, inserted-deleted+1, inserted-rowsPerEvent),
		fmt.Sprintf("DELETE FROM `%s`.r WHERE id BETWEEN %d AND %d", db, inserted-rowsPerEvent+1, inserted), "COMMIT")
	// 310 rows events, 62 full batches: the last run's last batch is full
	// too, and flush_interval never cuts one. Events an hour old: a reader
	// of recent ones counts as live, and its writers send a batch early
	// when nothing more is queued.
	h.session(db, append([]string{anHourAgo}, stmts...)...)

	for round := 0; round < 5; round++ {
		d := h.startDaemon(logPath, envPauseAfterRows+"=60", envCheckpointLastAtRows+"=30")
		waitLogCount(t, d, logPath, "test pause: stored", round+1, 2*time.Minute)
		if err := d.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-d.done
	}
	d = h.startDaemon(logPath)
	h.waitCaughtUpProcess(d, logPath, 2*time.Minute)
	stopDaemon(t, d)

	data, _ := os.ReadFile(logPath)
	skips := strings.Count(string(data), "were not sent again")
	t.Logf("restarts that skipped rows events stored before them: %d of 6", skips)
	if skips == 0 {
		t.Error("no restart skipped a rows event stored before it: each last checkpoint was at a batch's end")
	}
	var raw, final, versions, dropped uint64
	q := fmt.Sprintf("SELECT (SELECT count() FROM `%[1]s`.r), (SELECT count() FROM `%[1]s`.r FINAL), (SELECT uniqExact(id, _version) FROM `%[1]s`.r), "+
		"(SELECT toUInt64(sum(value)) FROM system.events WHERE event = 'DuplicatedInsertedBlocks')", db)
	if err := node.QueryRow(context.Background(), q).Scan(&raw, &final, &versions, &dropped); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var parts, merged uint64
	if err := node.QueryRow(context.Background(), fmt.Sprintf("SELECT count(), countIf(level > 0) FROM system.parts WHERE database = '%s' AND table = 'r' AND active", db)).Scan(&parts, &merged); err != nil {
		t.Fatal(err)
	}
	if merged > 0 {
		t.Fatalf("%d of %d parts are merges: the servers were to merge none (localserver.NoMerges)", merged, parts)
	}
	t.Logf("rows %d, FINAL %d, distinct versions %d; blocks ClickHouse dropped as sent before: %d", raw, final, versions, dropped)
	if final != uint64(inserted) || raw != final+uint64(updated+deleted) || versions != raw {
		t.Errorf("count() = %d, want count() FINAL (%d, want %d) + %d changed rows; %d distinct (id, _version)", raw, final, inserted, updated+deleted, versions)
	}
	if dropped == 0 {
		t.Error("no block was sent again: the kills hit no batch stored past the checkpoint")
	}
	h.verifyEqual("r")
}

// anHourAgo dates a session's binlog events an hour back: the daemon
// reading them is not live (router.liveWithin), so its writers cut
// batches by size alone.
const anHourAgo = "SET timestamp = UNIX_TIMESTAMP() - 3600"

// waitLogCount waits until the daemon's log holds line n times.
func waitLogCount(t *testing.T, d *daemon, logPath, line string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		data, _ := os.ReadFile(logPath)
		if strings.Count(string(data), line) >= n {
			return
		}
		select {
		case <-d.done:
			t.Fatalf("the daemon exited:\n%s", tail(string(data), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not logged %d times within %s:\n%s", line, n, timeout, tail(string(data), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopDaemon stops a child daemon with SIGTERM, as systemd does.
func stopDaemon(t *testing.T, d *daemon) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Fatal("the daemon did not stop within a minute of SIGTERM")
	}
}

// TestReplayPastTruncate: a table stored past a TRUNCATE TABLE while
// another table held the checkpoint before it. The restart skips the
// rows events the first run stored up to the TRUNCATE, applies the
// TRUNCATE again, and from there sends the table's rows again: skipping
// on past it would leave the table without the rows the TRUNCATE, read
// again, took out.
func TestReplayPastTruncate(t *testing.T) {
	h := newHarness(t, 1, "batch: {max_rows: 50, flush_interval: 1h, live_flush_interval: 1h}\ncheckpoint: {interval: 10ms}\n")
	db := h.dbs[0]
	h.exec(fmt.Sprintf("CREATE TABLE `%s`.r (id INT PRIMARY KEY, v INT NOT NULL)", db),
		fmt.Sprintf("CREATE TABLE `%s`.u (id INT PRIMARY KEY)", db))
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d := h.startDaemon(logPath)
	h.waitCaughtUpProcess(d, logPath, time.Minute)
	stopDaemon(t, d)

	// u's one row stays in a batch that never fills: the checkpoint stays
	// before it while r's batches go on past the TRUNCATE.
	stmts := []string{fmt.Sprintf("INSERT INTO `%s`.u VALUES (1)", db)}
	id := 0
	insert := func(txs int) {
		for tx := 0; tx < txs; tx++ {
			stmts = append(stmts, "BEGIN")
			for e := 0; e < 7; e++ {
				var vals []string
				for i := 0; i < 10; i++ {
					id++
					vals = append(vals, fmt.Sprintf("(%d, %d)", id, id))
				}
				stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.r VALUES %s", db, strings.Join(vals, ", ")))
			}
			stmts = append(stmts, "COMMIT")
		}
	}
	insert(4)
	stmts = append(stmts, fmt.Sprintf("TRUNCATE TABLE `%s`.r", db))
	insert(4)
	h.session(db, append([]string{anHourAgo}, stmts...)...) // 57 rows events: u's, 28 of r, the TRUNCATE, 28 of r

	d = h.startDaemon(logPath, envPauseAfterRows+"=56", envCheckpointLastAtRows+"=50")
	waitLogCount(t, d, logPath, "test pause: stored", 1, 2*time.Minute)
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.done

	// The last run flushes by time: u's batch and r's last one go.
	conf, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	quick := filepath.Join(filepath.Dir(h.path), "quick.yaml")
	if err := os.WriteFile(quick, []byte(strings.Replace(string(conf), "flush_interval: 1h, live_flush_interval: 1h", "flush_interval: 100ms", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	d = h.startDaemonOn(quick, logPath)
	h.waitCaughtUpProcess(d, logPath, 2*time.Minute)
	stopDaemon(t, d)
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), "were not sent again") {
		t.Errorf("the restart skipped no rows event of r stored before it:\n%s", tail(string(data), 4000))
	}
	h.verifyEqual("r", "u")
}
