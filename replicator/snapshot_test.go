package replicator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	binlog2ch "github.com/binlog2ch/binlog2ch"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/loadgen"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
)

// fillFieldTest creates binlog_field_test_1 in db and writes rows rows
// over four connections with loadgen's values, which fit every ClickHouse
// type, so every value compares exactly.
func (h *harness) fillFieldTest(db string, rows, maxLen int) {
	h.t.Helper()
	h.fillFieldTestAs(db, "binlog_field_test_1", rows, maxLen)
}

// fillFieldTestAs is fillFieldTest into a table of binlog_field_test's
// definition named table.
func (h *harness) fillFieldTestAs(db, table string, rows, maxLen int) {
	h.t.Helper()
	h.exec("SET GLOBAL max_allowed_packet = 268435456")
	ctx := context.Background()
	conn, err := h.my.Conn(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	ddl := strings.Replace(binlog2ch.BinlogFieldTestDDL, "binlog_field_test_1", table, 1)
	for _, q := range []string{loadgen.SessionSetup, "USE " + db, ddl} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			h.t.Fatal(err)
		}
	}
	conn.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	per := rows / 4
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := h.my.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, loadgen.SessionSetup); err != nil {
				errs <- err
				return
			}
			gen := loadgen.NewFieldTestGen(uint64(c + 1))
			if maxLen > 0 {
				gen.Compact(maxLen)
			}
			n := per
			if c == 3 {
				n = rows - 3*per
			}
			for done := 0; done < n; {
				k := min(1000, n-done)
				if _, err := conn.ExecContext(ctx, gen.Insert(db, table, k)); err != nil {
					errs <- err
					return
				}
				done += k
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
}

// fieldTestCompared are binlog_field_test's columns that MySQL's CAST(...
// AS CHAR) and ClickHouse's toString print alike.
var fieldTestCompared = []string{"id", "testtinyint", "testsmallint", "testmediumint", "testint", "testbigint",
	"testvarchar", "testchar", "testenum", "testset", "testtime", "testdate", "testyear", "testtimestamp", "testdatetime",
	"testdecimal", "testtext", "testbool", "test_unsinged_tinyint", "test_unsinged_smallint", "test_unsinged_mediumint",
	"test_unsinged_int", "test_unsinged_bigint"}

// chDump renders every column of a ClickHouse table but the version, in
// hex, ordered by the first column: two tables written by different paths
// compare exactly, whatever the types.
func (h *harness) chDump(db, table string, final bool) []string {
	h.t.Helper()
	ctx := context.Background()
	rows, err := h.ch.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = ?", db, table)
	if err != nil {
		h.t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			h.t.Fatal(err)
		}
		if c != "_version" {
			cols = append(cols, c)
		}
	}
	rows.Close()
	if len(cols) == 0 {
		h.t.Fatalf("%s.%s does not exist in ClickHouse", db, table)
	}
	var exprs []string
	for _, c := range cols {
		exprs = append(exprs, fmt.Sprintf("ifNull(hex(toString(`%s`)), 'NULL')", c))
	}
	fin := ""
	if final {
		fin = " FINAL"
	}
	q := fmt.Sprintf("SELECT arrayStringConcat([%s], '|') AS r FROM `%s`.`%s`%s ORDER BY r", strings.Join(exprs, ", "), db, table, fin)
	res, err := h.ch.Query(ctx, q)
	if err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
	defer res.Close()
	var out []string
	for res.Next() {
		var s string
		if err := res.Scan(&s); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func (h *harness) sameDump(what string, a, b []string) {
	h.t.Helper()
	if len(a) != len(b) {
		h.t.Errorf("%s: %d rows vs %d", what, len(a), len(b))
		return
	}
	for i := range a {
		if a[i] != b[i] {
			h.t.Errorf("%s: row %d differs:\n%s\n%s", what, i, a[i], b[i])
			return
		}
	}
}

// fullSyncConfig is the harness config with fullsync settings, its own
// state_dir, and each database copied into db+suffix.
func (h *harness) fullSyncConfig(extra, suffix string) *config.Config {
	h.t.Helper()
	data, err := os.ReadFile(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	conf := strings.Replace(string(data), "state_dir: state", "state_dir: state_fs"+suffix, 1)
	if suffix != "" {
		var m []string
		for _, db := range h.dbs {
			m = append(m, fmt.Sprintf("%s: %s%s", db, db, suffix))
			h.t.Cleanup(func() { _ = h.ch.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+suffix) })
		}
		conf = strings.Replace(conf, "clickhouse: {", "clickhouse: {database_map: {"+strings.Join(m, ", ")+"}, ", 1)
	}
	path := filepath.Join(filepath.Dir(h.path), "fullsync"+suffix+".yaml")
	if err := os.WriteFile(path, []byte(conf+extra), 0o600); err != nil {
		h.t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		h.t.Fatal(err)
	}
	return cfg
}

func (h *harness) fullSync(cfg *config.Config, logs io.Writer, opts FullSyncOptions) ([]snapshot.TableStatus, error) {
	h.t.Helper()
	r, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		h.t.Fatal(err)
	}
	defer r.Close()
	return r.FullSync(context.Background(), opts)
}

// everyTypeTable is many column types with edge values and NULLs.
func (h *harness) everyTypeTable(db string) []string {
	h.exec(
		"CREATE TABLE "+db+".ty (id BIGINT UNSIGNED PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, mi MEDIUMINT, mu MEDIUMINT UNSIGNED, "+
			"bu BIGINT UNSIGNED, d DECIMAL(20,6), d2 DECIMAL(65,30), f FLOAT, db DOUBLE, bt BIT(10), b64 BIT(64), y YEAR, dt DATE, dtm DATETIME, "+
			"dtm6 DATETIME(6), ts TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, tm TIME(2), c CHAR(3), bin BINARY(3), vb VARBINARY(5), "+
			"tx TEXT, e ENUM('x','y,z'), s SET('p','q'), j JSON, g GEOMETRY)",
		"INSERT INTO "+db+".ty VALUES (18446744073709551615, -128, 255, -8388608, 16777215, 18446744073709551615, -12345678901234.123456, "+
			"-99999999999999999999999999999999999.999999999999999999999999999999, 3.40282e38, 1.7976931348623157e308, b'1010101010', "+
			"b'1111111111111111111111111111111111111111111111111111111111111111', 2155, '2024-02-29', '2024-02-29 12:34:56', "+
			"'2024-02-29 12:34:56.123456', '2038-01-19 03:14:07', '2038-01-19 03:14:07.999', '-838:59:58.99', 'é', 'a', X'00FF00', "+
			"'text', 'y,z', 'p,q', '{\"a\": [1, 2]}', ST_GeomFromText('POINT(1 2)'))",
		"INSERT INTO "+db+".ty VALUES (9223372036854775808, 127, 0, 0, 0, 9223372036854775807, 0.000001, 1e-30, 0.1, 0.1, 0, 0, 1901, "+
			"'1970-01-02', '1970-01-02 00:00:00', '1970-01-01 00:00:00.000001', '1970-01-01 00:00:01', NULL, '00:00:00', '', '', '', '', 'x', '', '[]', "+
			"ST_GeomFromText('LINESTRING(0 0, 1 1)'))",
		"INSERT INTO "+db+".ty (id) VALUES (1), (2), (3)",
		"INSERT INTO "+db+".ty (id, f, db, tm, bin) VALUES (4, -1.17549e-38, -2.2250738585072014e-308, '838:59:59', X'000000')",
	)
	return []string{"id", "ti", "tu", "mi", "mu", "bu", "d", "d2", "y", "dt", "dtm", "dtm6", "ts", "ts3", "tm", "c", "tx", "e", "s", "j"}
}

// TestFullSyncCopiesTables copies binlog_field_test (200k rows), a table of
// every type, a composite-key table and a table without a key, and compares
// every row with MySQL and with what the binlog replication (CDC) wrote for
// the same rows: the two paths must write identical values.
func TestFullSyncCopiesTables(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.fillFieldTest(a, 200_000, 64)
	tyCols := h.everyTypeTable(a)
	h.exec("CREATE TABLE " + a + ".comp (tenant INT NOT NULL, code VARCHAR(20) NOT NULL, day DATE NOT NULL, v DECIMAL(10,2), " +
		"PRIMARY KEY (tenant, code, day)) DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_general_ci")
	var vals []string
	for i := 0; i < 6000; i++ {
		code := []string{"a", "B", "c", "Ä", "b-", "ab"}[i%6] + fmt.Sprint(i%7)
		vals = append(vals, fmt.Sprintf("(%d, '%s', '2024-01-01' + INTERVAL %d DAY, %d.%02d)", i%5, code, i/42, i, i%100))
	}
	h.exec("INSERT INTO " + a + ".comp VALUES " + strings.Join(vals, ", "))
	h.exec("CREATE TABLE "+a+".nokey (x INT, s VARCHAR(10))",
		"INSERT INTO "+a+".nokey VALUES (1, 'a'), (1, 'a'), (2, NULL), (NULL, 'z')")
	h.waitCaughtUp(run, 120*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	cfg := h.fullSyncConfig("fullsync: {chunk_rows: 1000}\n", "_fs")
	var logs syncBuffer
	statuses, err := h.fullSync(cfg, &logs, FullSyncOptions{})
	if err != nil {
		t.Fatalf("fullsync: %v\n%s", err, tail(logs.String(), 4000))
	}
	byName := map[string]snapshot.TableStatus{}
	for _, s := range statuses {
		byName[s.Name.Table] = s
	}
	if s := byName["binlog_field_test_1"]; s.Rows != 200_000 || s.Chunks < 200 || s.State != snapshot.StateDone {
		t.Errorf("binlog_field_test_1: %+v", s)
	}
	if s := byName["comp"]; s.Rows != 6000 || s.Chunks < 6 {
		t.Errorf("comp: %+v", s)
	}
	if s := byName["nokey"]; !s.Scan || s.Rows != 4 {
		t.Errorf("nokey: %+v", s)
	}
	fs := a + "_fs"
	h.assertEqualInto(a, fs, "binlog_field_test_1", fieldTestCompared)
	h.assertEqualInto(a, fs, "ty", tyCols)
	h.assertEqualInto(a, fs, "comp", []string{"tenant", "code", "day", "v"})
	for _, table := range []string{"binlog_field_test_1", "ty", "comp"} {
		h.sameDump(table+": CDC vs fullsync", h.chDump(a, table, true), h.chDump(fs, table, true))
	}
	h.sameDump("nokey: CDC vs fullsync", h.chDump(a, "nokey", false), h.chDump(fs, "nokey", false))

	// A second fullsync starts a new copy (the first one completed) and
	// leaves the same state after FINAL.
	if _, err := h.fullSync(cfg, io.Discard, FullSyncOptions{Tables: []schema.TableName{{Database: a, Table: "comp"}}}); err != nil {
		t.Fatal(err)
	}
	h.assertEqualInto(a, fs, "comp", []string{"tenant", "code", "day", "v"})
}

// assertEqualInto is assertEqual for a table copied into another
// ClickHouse database.
func (h *harness) assertEqualInto(db, chDB, table string, cols []string) {
	h.t.Helper()
	h.compareRows(db+"."+table+" -> "+chDB, cols, h.mysqlRows(db, table, cols), h.clickhouseRows(chDB, table, cols))
}

// TestRunSnapshotsWhileWritten: `run` starts without a checkpoint on tables
// that already hold rows and keep changing (inserts, updates, key changes,
// deletes) while it copies them; once it follows the binlog and has caught
// up, ClickHouse equals MySQL. Each chunk is read only after another
// transaction committed, so writes interleave with the whole copy however
// fast it runs.
func TestRunSnapshotsWhileWritten(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 500, workers: 2}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".w (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(40))",
		"CREATE TABLE "+a+".w2 (a INT NOT NULL, b VARCHAR(10) NOT NULL, v INT, PRIMARY KEY (a, b))")
	for i := 0; i < 20; i++ {
		var vals, vals2 []string
		for j := 0; j < 1000; j++ {
			id := i*1000 + j
			vals = append(vals, fmt.Sprintf("(%d, %d, 's%d')", id, id%97, id))
			vals2 = append(vals2, fmt.Sprintf("(%d, 'k%d', %d)", id%50, id, id))
		}
		h.exec("INSERT INTO "+a+".w VALUES "+strings.Join(vals, ", "), "INSERT INTO "+a+".w2 VALUES "+strings.Join(vals2, ", "))
	}
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var workErr error
	var txns atomic.Int64
	ended := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ended)
		rnd := rand.New(rand.NewPCG(5, 6))
		conn, err := h.my.Conn(context.Background())
		if err != nil {
			workErr = err
			return
		}
		defer conn.Close()
		next := 20000
		for i := 0; !stop.Load(); i++ {
			stmts := []string{"BEGIN"}
			for j := 0; j < 1+rnd.IntN(10); j++ {
				id := rnd.IntN(next)
				switch p := rnd.IntN(10); {
				case p < 3:
					next++
					stmts = append(stmts, fmt.Sprintf("INSERT INTO %s.w VALUES (%d, %d, 'ins %d')", a, next, rnd.IntN(1000), i),
						fmt.Sprintf("INSERT IGNORE INTO %s.w2 VALUES (%d, 'n%d', %d)", a, rnd.IntN(60), next, i))
				case p < 6:
					stmts = append(stmts, fmt.Sprintf("UPDATE %s.w SET v = v + 1, s = 'upd %d' WHERE id = %d", a, i, id),
						fmt.Sprintf("UPDATE %s.w2 SET v = %d WHERE a = %d AND b = 'k%d'", a, i, id%50, id))
				case p < 7:
					stmts = append(stmts, fmt.Sprintf("UPDATE IGNORE %s.w SET id = id + 1000000 WHERE id = %d", a, id))
				default:
					stmts = append(stmts, fmt.Sprintf("DELETE FROM %s.w WHERE id = %d", a, id),
						fmt.Sprintf("DELETE FROM %s.w2 WHERE a = %d AND b = 'k%d'", a, id%50, id))
				}
			}
			stmts = append(stmts, "COMMIT")
			for _, q := range stmts {
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					workErr = fmt.Errorf("%s: %w", q, err)
					return
				}
			}
			txns.Add(1)
		}
	}()
	var chunks atomic.Int64
	before := txns.Load()
	run := h.startWith(testHooks{beforeChunk: func(ctx context.Context, _ schema.TableName) {
		// A transaction more than chunks read so far, or the workload's end.
		want := before + chunks.Add(1)
		for txns.Load() < want {
			select {
			case <-ctx.Done():
				return
			case <-ended:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}})
	// Until the snapshot is done, count the transactions written during it.
	deadline := time.Now().Add(120 * time.Second)
	for {
		st, err := snapshot.Load(h.cfg.StateDir, snapshot.InitialFile)
		if err != nil {
			t.Fatal(err)
		}
		if st != nil && st.Complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot did not finish; logs:\n%s", tail(run.logs.String(), 6000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	during := txns.Load() - before
	stop.Store(true)
	wg.Wait()
	if workErr != nil {
		t.Fatal(workErr)
	}
	h.waitCaughtUp(run, 60*time.Second)
	t.Logf("%d transactions written while the snapshot ran", during)
	if during < 5 {
		t.Errorf("only %d transactions ran during the snapshot: the test did not test concurrency", during)
	}
	h.assertEqual(a, "w", []string{"id", "v", "s"})
	h.assertEqual(a, "w2", []string{"a", "b", "v"})
	if !strings.Contains(run.logs.String(), "initial snapshot done") {
		t.Errorf("no snapshot logged:\n%s", tail(run.logs.String(), 3000))
	}
}

// envFullSync makes the test binary run `fullsync` on the given config
// instead of the tests, so a test can SIGKILL it.
const envFullSync = "BINLOG2CH_TEST_FULLSYNC_CONFIG"

// envFullSyncRecreate=1 makes that fullsync a -recreate one.
const envFullSyncRecreate = "BINLOG2CH_TEST_FULLSYNC_RECREATE"

func fullSyncMain(path string) int {
	return childMain(path, "fullsync", func(ctx context.Context, r *Replicator) error {
		// Not canceled by SIGTERM: the tests stop it with SIGKILL only.
		_, err := r.FullSync(context.WithoutCancel(ctx), FullSyncOptions{Recreate: os.Getenv(envFullSyncRecreate) == "1"})
		// The peak RSS of this process image, for the tests: the rusage
		// the parent gets counts the parent's own peak from before the exec.
		if status, rerr := os.ReadFile("/proc/self/status"); rerr == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if strings.HasPrefix(line, "VmHWM:") {
					fmt.Fprintln(os.Stderr, peakRSSLine+strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
				}
			}
		}
		return err
	})
}

// peakRSSLine starts the line a fullsync child prints its peak RSS on
// ("<n> kB").
const peakRSSLine = "child peak RSS: "

// childPeakRSSMiB reads the peak RSS a fullsync child printed.
func childPeakRSSMiB(t testing.TB, out string) float64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, peakRSSLine); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(rest, "kB")), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("the child printed no peak RSS:\n%s", tail(out, 2000))
	return 0
}

// TestFaultFullSyncKilledAndResumed SIGKILLs a fullsync (a child process) once a
// fifth of the table is confirmed, runs it again, and checks the result is
// exact and the second run read only the rows the first had not confirmed;
// also for -recreate, whose second run must not drop the table again. The
// child's readers stop after that fifth (envPauseAfterChunks), so the kill
// lands mid-copy on a machine of any speed.
func TestFaultFullSyncKilledAndResumed(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("recreate=%v", recreate), func(t *testing.T) { testFullSyncKilledAndResumed(t, recreate) })
	}
}

func testFullSyncKilledAndResumed(t *testing.T, recreate bool) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".big (id INT PRIMARY KEY, grp INT NOT NULL, s VARCHAR(64), d DECIMAL(12,2))")
	const total = 150_000
	for i := 0; i < total/5000; i++ {
		h.exec(fmt.Sprintf("INSERT INTO %s.big SELECT seq, seq %% 13, CONCAT('row ', seq, REPEAT('x', seq %% 40)), seq / 7 "+
			"FROM %s.seq_%d_to_%d", a, a, i*5000+1, (i+1)*5000))
	}
	cfg := h.fullSyncConfig("fullsync: {chunk_rows: 2000, workers: 1}\n", "")
	path := filepath.Join(filepath.Dir(h.path), "fullsync.yaml")

	logPath := filepath.Join(t.TempDir(), "fullsync.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	const chunk, pauseAfter = 2000, 15 // a fifth of the table
	cmd.Env = append(os.Environ(), envFullSync+"="+path, fmt.Sprintf("%s=%d", envPauseAfterChunks, pauseAfter))
	if recreate {
		cmd.Env = append(cmd.Env, envFullSyncRecreate+"=1")
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(120 * time.Second)
	for {
		st, err := snapshot.Load(cfg.StateDir, snapshot.FullSyncFile)
		if err != nil {
			t.Fatal(err)
		}
		if p := progressOf(st, a+".big"); p != nil && p.Rows >= pauseAfter*chunk {
			break
		}
		select {
		case <-exited:
			data, _ := os.ReadFile(logPath)
			t.Fatalf("fullsync exited before it was killed:\n%s", tail(string(data), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("fullsync made no progress")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	logFile.Close()
	st, err := snapshot.Load(cfg.StateDir, snapshot.FullSyncFile)
	if err != nil {
		t.Fatal(err)
	}
	confirmed := progressOf(st, a+".big")
	if confirmed.Complete || confirmed.Rows >= total {
		t.Fatalf("killed too late (the copy did not pause): %+v", confirmed)
	}

	var logs syncBuffer
	statuses, err := h.fullSync(cfg, &logs, FullSyncOptions{Recreate: recreate})
	if err != nil {
		t.Fatalf("second fullsync: %v\n%s", err, tail(logs.String(), 4000))
	}
	s := statuses[0]
	t.Logf("first run confirmed %d rows in %d chunks; second run read %d rows in %d chunks", confirmed.Rows, confirmed.Chunks, s.Rows, s.Chunks)
	if !s.Resumed || s.Rows != total-confirmed.Rows {
		t.Errorf("second run read %d rows (resumed %v), want exactly the %d not confirmed", s.Rows, s.Resumed, total-confirmed.Rows)
	}
	if !strings.Contains(logs.String(), "resuming the interrupted fullsync") || strings.Contains(logs.String(), "dropping the target") {
		t.Errorf("no resume logged, or the table dropped again:\n%s", logs.String())
	}
	h.assertEqual(a, "big", []string{"id", "grp", "s", "d"})
	h.verifyEqual("big")
	var n, distinct uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT count(), uniqExact(id) FROM "+a+".big FINAL").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != total || distinct != total {
		t.Errorf("ClickHouse FINAL holds %d rows, %d distinct ids; want %d", n, distinct, total)
	}
}

func progressOf(st *snapshot.State, table string) *snapshot.TableProgress {
	if st == nil {
		return nil
	}
	return st.Tables[table]
}

// TestFaultRunSnapshotKilledAndResumed SIGKILLs the daemon during its initial
// snapshot; the restarted daemon finishes the snapshot (rather than
// following the binlog from the saved checkpoint and skipping the rest of
// the rows) and ClickHouse ends equal to MySQL.
func TestFaultRunSnapshotKilledAndResumed(t *testing.T) {
	// Small batches: the copy takes a hundred inserts, so the part copied
	// before the pause is confirmed in several.
	h := newHarness(t, 1, "fullsync: {chunk_rows: 1000, workers: 1}\nbatch: {max_rows: 1000, flush_interval: 100ms}\ncheckpoint: {interval: 100ms}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".r (id INT PRIMARY KEY, s VARCHAR(64))")
	const total = 100_000
	for i := 0; i < total/5000; i++ {
		h.exec(fmt.Sprintf("INSERT INTO %s.r SELECT seq, CONCAT('row ', seq) FROM %s.seq_%d_to_%d", a, a, i*5000+1, (i+1)*5000))
	}
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	// Its readers stop after a fifth of the table, until the kill.
	const pauseAfter = 20
	d := h.startDaemon(logPath, fmt.Sprintf("%s=%d", envPauseAfterChunks, pauseAfter))
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := snapshot.Load(h.cfg.StateDir, snapshot.InitialFile)
		if err != nil {
			t.Fatal(err)
		}
		if p := progressOf(st, a+".r"); p != nil && p.Rows >= pauseAfter*1000 {
			if p.Complete {
				t.Fatal("the snapshot finished before it could be killed (it did not pause)")
			}
			break
		}
		select {
		case <-d.done:
			data, _ := os.ReadFile(logPath)
			t.Fatalf("the daemon exited:\n%s", tail(string(data), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no snapshot progress")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	h.exec("UPDATE "+a+".r SET s = 'changed' WHERE id % 1000 = 0", "DELETE FROM "+a+".r WHERE id % 1000 = 1")
	d = h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
	}()
	h.waitCaughtUpProcess(d, logPath, 60*time.Second)
	deadline = time.Now().Add(60 * time.Second)
	for {
		st, err := snapshot.Load(h.cfg.StateDir, snapshot.InitialFile)
		if err != nil {
			t.Fatal(err)
		}
		if st.Complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the resumed snapshot did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.waitCaughtUpProcess(d, logPath, 60*time.Second)
	h.assertEqual(a, "r", []string{"id", "s"})
	h.verifyEqual("r")
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), "resuming the interrupted initial snapshot") {
		t.Errorf("no resume logged:\n%s", tail(string(data), 3000))
	}
}

// TestFullSyncRetriesLostConnections: as the third range starts, every
// connection of the copy's MySQL user (one with a password) is killed:
// ranges being read fail mid-result, pooled connections are dead when next
// used, and the key walk may lose its own. Each failed read is retried on
// a new connection, and the copy ends exact.
func TestFullSyncRetriesLostConnections(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	user := servertest.Name("b2c_snap")
	h.exec("CREATE USER '"+user+"'@'%' IDENTIFIED BY 'snap-pw'", "GRANT ALL PRIVILEGES ON *.* TO '"+user+"'@'%'")
	t.Cleanup(func() { _, _ = h.my.Exec("DROP USER '" + user + "'@'%'") })
	h.fillFieldTest(a, 20_000, 64)
	cfg := h.fullSyncConfig("fullsync: {chunk_rows: 1000}\n", "_fs")
	cfg.MySQL.User, cfg.MySQL.Password = user, config.Secret("snap-pw")
	var logs syncBuffer
	r, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var chunks atomic.Int64
	r.hooks.beforeChunk = func(ctx context.Context, _ schema.TableName) {
		if chunks.Add(1) == 3 {
			if _, err := h.my.ExecContext(ctx, "KILL CONNECTION USER '"+user+"'"); err != nil {
				t.Errorf("kill: %v", err)
			}
		}
	}
	if _, err := r.FullSync(context.Background(), FullSyncOptions{}); err != nil {
		t.Fatalf("fullsync: %v\n%s", err, tail(logs.String(), 4000))
	}
	if !strings.Contains(logs.String(), "failed; retrying") {
		t.Errorf("no read was retried:\n%s", tail(logs.String(), 4000))
	}
	h.assertEqualInto(a, a+"_fs", "binlog_field_test_1", fieldTestCompared)
}

// TestRunStoppedAtSnapshotEnd: the daemon is told to stop (its context
// ends, as SIGTERM ends it) once the initial snapshot has copied its
// tables and before the copy's end is read and its checkpoint saved. It
// stops cleanly (Run returns nil: a service manager's stop is not a
// failure), and the next start resumes the complete copy and ends equal
// to MySQL, rows written meanwhile included.
func TestRunStoppedAtSnapshotEnd(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, s VARCHAR(64))", "INSERT INTO "+a+".t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	r, err := New(context.Background(), h.cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	copied := false
	r.hooks = testHooks{snapshotCopied: func() { copied = true; cancel() }}
	err = r.Run(ctx)
	r.Close()
	if err != nil {
		t.Fatalf("stopped at the snapshot's end: %v\n%s", err, tail(logs.String(), 4000))
	}
	if !copied {
		t.Fatalf("the snapshot's end was not reached:\n%s", tail(logs.String(), 4000))
	}
	if !strings.Contains(logs.String(), "stopped at the end of the initial snapshot") {
		t.Errorf("the stop not logged:\n%s", tail(logs.String(), 4000))
	}
	h.exec("UPDATE "+a+".t SET s = 'bb' WHERE id = 2", "INSERT INTO "+a+".t VALUES (4, 'd')")
	run := h.start()
	h.waitCaughtUp(run, 60*time.Second)
	h.verifyEqual("t")
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
}
