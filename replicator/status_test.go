package replicator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
	"github.com/binlog2ch/binlog2ch/status"
)

// statusXSS is a MySQL table name that would run a script if the page
// took it for markup.
const statusXSS = "<img src=x onerror=alert(1)>"

// fetchStatus reads the daemon's /status.json with every table.
func fetchStatus(t *testing.T, addr string) status.Status {
	t.Helper()
	resp, err := http.Get("http://" + addr + status.JSONPath + "?limit=0&sort=name")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st status.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// statusTable finds a table in a status.
func statusTable(st status.Status, db, table string) *status.Table {
	for i := range st.Tables {
		if st.Tables[i].Database == db && st.Tables[i].Table == table {
			return &st.Tables[i]
		}
	}
	return nil
}

// chromium is the headless browser the page test runs: Debian's chromium
// package, which `make deps` installs. Without it the test skips, except
// under CI, where it must run.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed; `make deps` installs it (Debian package chromium), and CI runs the status page test")
	}
	t.Skip("chromium is not installed (Debian package chromium; `make deps` installs it): the status page is not opened in a browser")
	return ""
}

// runChromium runs headless Chromium on url with args and returns its
// stdout. It runs in a process group of its own, killed when it ends, so
// no renderer outlives the test.
func runChromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
		"--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(home, "profile"),
		// The page polls every 2 s; virtual time runs the first polls
		// without waiting for them.
		"--virtual-time-budget=8000"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what is left of the group
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, tail(errOut.String(), 3000))
	}
	return out.Bytes()
}

// TestStatusPage starts the daemon, writes rows to three tables (one named
// as markup), and opens the status page in headless Chromium: the page,
// filled by its script from /status.json, shows each table with the rows
// by operation the daemon wrote, the name as text and never as an
// element. It saves a screenshot (docs/images/status.png when
// BINLOG2CH_UPDATE_DOCS is set).
func TestStatusPage(t *testing.T) {
	bin := chromium(t)
	h := newHarness(t, 2, "")
	a, b := h.dbs[0], h.dbs[1]
	run := h.start()
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	h.exec(
		"CREATE TABLE "+a+".orders (id INT PRIMARY KEY, amount DECIMAL(10,2), note VARCHAR(40))",
		"CREATE TABLE "+a+".customers (id INT PRIMARY KEY, name VARCHAR(40))",
		"CREATE TABLE "+a+".events (id BIGINT PRIMARY KEY, kind VARCHAR(20))",
		"CREATE TABLE "+b+".`"+statusXSS+"` (id INT PRIMARY KEY)",
	)
	for i := 0; i < 12; i++ {
		var orders, events []string
		for j := 0; j < 10; j++ {
			n := i*10 + j
			orders = append(orders, fmt.Sprintf("(%d, %d.50, 'order %d')", n, n, n))
			events = append(events, fmt.Sprintf("(%d, 'k%d')", n, n%7), fmt.Sprintf("(%d, 'k%d')", 1000+n, n%5))
		}
		h.exec("INSERT INTO "+a+".orders VALUES "+strings.Join(orders, ","), "INSERT INTO "+a+".events VALUES "+strings.Join(events, ","))
	}
	h.exec(
		"INSERT INTO "+a+".customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Edsger')",
		"UPDATE "+a+".orders SET note = 'paid' WHERE id < 30",
		"DELETE FROM "+a+".orders WHERE id >= 110",
		"UPDATE "+a+".customers SET name = 'Barbara' WHERE id = 3",
		"INSERT INTO "+b+".`"+statusXSS+"` VALUES (1), (2)",
	)
	h.waitCaughtUp(run, 60*time.Second)
	want := map[string][3]uint64{ // inserted, updated, deleted
		a + ".orders":       {120, 30, 10},
		a + ".events":       {240, 0, 0},
		a + ".customers":    {3, 1, 0},
		b + "." + statusXSS: {2, 0, 0},
	}
	// Read once at start (the shared server keeps its binlog forever).
	waitFor(t, 60*time.Second, "the binlog retention read", func() bool { return fetchStatus(t, addr).Retention != nil })
	// Caught up: every row is durable, so the counts are final.
	st := fetchStatus(t, addr)
	for name, w := range want {
		db, table, _ := strings.Cut(name, ".")
		tb := statusTable(st, db, table)
		if tb == nil || tb.Inserted != w[0] || tb.Updated != w[1] || tb.Deleted != w[2] || tb.LastFlush.IsZero() {
			t.Fatalf("/status.json %s: %+v, want %v", name, tb, w)
		}
	}
	if !st.Running || st.Phase != phaseReplicating || st.Checkpoint == nil || st.ReadPosition == "" || st.Source.Product != "MariaDB" || st.Target.Product != "ClickHouse" || st.Source.Version == "" {
		t.Fatalf("/status.json daemon: %+v", st)
	}

	shown, dom := pageRows(t, bin, "http://"+addr+"/?limit=0&sort=name")
	for name, w := range want {
		c := shown[name]
		if c == nil {
			t.Fatalf("the page shows no row for %s; rows: %v", name, shown)
		}
		if c["name"] != name || c["inserted"] != fmt.Sprint(w[0]) || c["updated"] != fmt.Sprint(w[1]) || c["deleted"] != fmt.Sprint(w[2]) || !strings.HasSuffix(c["flush"], " ago") || c["state"] != "streaming" {
			t.Errorf("the page's row for %s: %v, want %v", name, c, w)
		}
	}
	// The markup-like name is text: escaped in the DOM, no element made.
	if strings.Contains(dom, "<img") || !strings.Contains(dom, html.EscapeString(statusXSS)) {
		t.Errorf("the table named %q became markup:\n%s", statusXSS, dom)
	}
	for _, text := range []string{"ready", "replicating", "MariaDB", "ClickHouse", st.Checkpoint.Position[:strings.Index(st.Checkpoint.Position, ":")], "table writers", "running", "none under way", "purges no binlog by itself"} {
		if !strings.Contains(dom, text) {
			t.Errorf("the page does not show %q", text)
		}
	}

	// The screenshot the docs show: the first database's tables, one of
	// them taking rows meanwhile, so rows/s shows.
	h.exec("CREATE TABLE " + a + ".clicks (id INT PRIMARY KEY, at DATETIME)")
	trickle, stopTrickle := context.WithCancel(context.Background())
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		for id := 0; trickle.Err() == nil; id += 25 {
			var rows []string
			for j := range 25 {
				rows = append(rows, fmt.Sprintf("(%d, NOW())", id+j))
			}
			if _, err := h.my.ExecContext(trickle, "INSERT INTO "+a+".clicks VALUES "+strings.Join(rows, ",")); err != nil {
				return
			}
			select {
			case <-trickle.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	defer func() { stopTrickle(); <-trickled }()
	waitFor(t, 60*time.Second, "rows/s measured", func() bool {
		tb := statusTable(fetchStatus(t, addr), a, "clicks")
		return tb != nil && tb.RowsPerSecond > 0
	})
	shot := filepath.Join(t.TempDir(), "status.png")
	runChromium(t, bin, "http://"+addr+"/?sort=rows&filter="+a, "--screenshot="+shot, "--window-size=1280,760", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 760 {
		t.Errorf("screenshot is %v, want 1280x760", b)
	}
	if os.Getenv("BINLOG2CH_UPDATE_DOCS") != "" {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "images", "status.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStatusTableLag: with ClickHouse down, a table with a row waiting
// shows a lag counted from that row's commit, growing, and its failed
// inserts with the last error; a table with nothing waiting shows only
// the reader's lag. After ClickHouse is back and the row is in, the
// table's lag is the reader's again.
func TestStatusTableLag(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.ClickHouse.External {
		t.Skip("needs a private ClickHouse it can kill")
	}
	a := h.dbs[0]
	run := h.start()
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	h.exec("CREATE TABLE "+a+".busy (id INT PRIMARY KEY)", "CREATE TABLE "+a+".idle (id INT PRIMARY KEY)",
		"INSERT INTO "+a+".busy VALUES (1)", "INSERT INTO "+a+".idle VALUES (1)")
	h.waitCaughtUp(run, 30*time.Second)

	if err := h.srv.ClickHouse.Kill(); err != nil {
		t.Fatal(err)
	}
	h.exec("INSERT INTO " + a + ".busy VALUES (2)")
	committed := time.Now() // the row's commit is before this
	var busy, idle *status.Table
	var st status.Status
	waitFor(t, 60*time.Second, "the waiting row's lag growing and its failed inserts shown", func() bool {
		st = fetchStatus(t, addr)
		busy, idle = statusTable(st, a, "busy"), statusTable(st, a, "idle")
		return busy != nil && idle != nil && busy.LagSeconds >= idle.LagSeconds+2 && busy.Errors > 0
	})
	if least := st.GeneratedAt.Sub(committed).Seconds(); busy.LagSeconds < least {
		t.Errorf("busy's lag %.2f s, less than the %.2f s since its row was committed", busy.LagSeconds, least)
	}
	if busy.LastError == "" || busy.LastErrorAt.IsZero() || st.Totals.TablesWithErrors != 1 || st.Errors["insert"] == 0 || st.Target.Up || st.Ready {
		t.Errorf("with ClickHouse down: busy %+v; status %+v", busy, st)
	}
	if idle.Errors != 0 || idle.LagSeconds != st.SourceLagSeconds {
		t.Errorf("idle: %+v, want no errors and the reader's lag %.2f s", idle, st.SourceLagSeconds)
	}

	if err := h.srv.ClickHouse.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitCaughtUp(run, 90*time.Second)
	waitFor(t, 30*time.Second, "busy's lag back to the reader's", func() bool {
		st = fetchStatus(t, addr)
		busy = statusTable(st, a, "busy")
		return busy != nil && busy.LagSeconds == st.SourceLagSeconds && busy.Inserted == 2 && busy.QueuedRows == 0
	})
}

// TestStatusDuringInitialSnapshot: while the initial snapshot copies (held
// after a few chunks), the status says so and shows the table's copy in
// progress; once it is done, the phase is replicating and the table's copy
// done with every row.
func TestStatusDuringInitialSnapshot(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 100, workers: 1}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE " + a + ".s (id INT PRIMARY KEY, v INT)")
	var vals []string
	for i := range 1000 {
		vals = append(vals, fmt.Sprintf("(%d, %d)", i, i))
	}
	h.exec("INSERT INTO " + a + ".s VALUES " + strings.Join(vals, ","))
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var chunks atomic.Int64
	run := h.startWith(testHooks{beforeChunk: func(ctx context.Context, _ schema.TableName) {
		if chunks.Add(1) > 3 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	var st status.Status
	waitFor(t, 60*time.Second, "the copy in progress on the status", func() bool {
		st = fetchStatus(t, addr)
		s := statusTable(st, a, "s")
		return st.Phase == phaseSnapshot && s != nil && s.Snapshot != nil && s.Snapshot.State == snapshot.StateCopying && s.Snapshot.Copied > 0
	})
	if s := statusTable(st, a, "s"); s.Snapshot.Copied > 300 || st.Totals.TablesCopying != 1 || st.Totals.SnapshotEstimated == 0 {
		t.Errorf("held after 3 chunks of 100: %+v, totals %+v", s.Snapshot, st.Totals)
	}
	close(release)
	h.waitCaughtUp(run, 60*time.Second)
	waitFor(t, 30*time.Second, "the copy done on the status", func() bool {
		st = fetchStatus(t, addr)
		s := statusTable(st, a, "s")
		return st.Phase == phaseReplicating && s != nil && s.Snapshot != nil && s.Snapshot.Done() && s.Snapshot.Copied == 1000 && st.Totals.TablesCopying == 0
	})
}

// TestStatusDuringOnlineCopy: a table selected at a reload is copied
// online; held after a few chunks, /status.json, the text of `binlog2ch
// status` and the page (in headless Chromium) show it copying with its
// progress, the other table streaming, and the count in the summary;
// after the swap it streams and the copy is gone from the status.
func TestStatusDuringOnlineCopy(t *testing.T) {
	h := newHarness(t, 1, "fullsync: {chunk_rows: 100, workers: 1}\n")
	a := h.dbs[0]
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE "+a+".skip_n (id INT PRIMARY KEY, v VARCHAR(20))")
	h.fill(a, "skip_n", 1000)
	h.exec("ANALYZE TABLE " + a + ".skip_n") // MySQL's estimate, which the progress is of
	release := make(chan struct{})
	var chunks atomic.Int64
	run := h.startWith(testHooks{beforeChunk: func(ctx context.Context, _ schema.TableName) {
		if chunks.Add(1) > 3 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	h.fill(a, "t", 10)
	h.waitCaughtUp(run, 30*time.Second)
	if st := fetchStatus(t, addr); st.Totals.States[status.StateStreaming] != 1 || st.Totals.OnlineCopies() != 0 {
		t.Fatalf("before the reload: %+v", st.Totals)
	}
	if err := run.r.Reload(config.TablesConfig{Include: []string{a + ".*"}}); err != nil {
		t.Fatal(err)
	}

	var st status.Status
	var n *status.Table
	waitFor(t, 60*time.Second, "the online copy in progress on the status", func() bool {
		st = fetchStatus(t, addr)
		n = statusTable(st, a, "skip_n")
		return n != nil && n.State == status.StateCopying && n.Copy != nil && n.Copy.Copied > 0
	})
	if c := n.Copy; c.Copied > 300 || c.Estimated < 500 || c.Reason != state.ReasonSelected || c.Since.IsZero() || c.Error != "" {
		t.Errorf("held after 3 chunks of 100: %+v", c)
	}
	if tb := statusTable(st, a, "t"); tb == nil || tb.State != status.StateStreaming || tb.Copy != nil {
		t.Errorf("the table not copied: %+v", tb)
	}
	if tt := st.Totals; tt.States[status.StateCopying] != 1 || tt.OnlineCopies() != 1 || tt.CopyCopied != n.Copy.Copied || tt.CopyEstimated != n.Copy.Estimated {
		t.Errorf("totals during the copy: %+v", tt)
	}
	var text bytes.Buffer
	if err := status.WriteText(&text, &st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"online copies", "1 copying (", a + ".skip_n is being copied online (selected", " copying "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("binlog2ch status: no %q in:\n%s", want, text.String())
		}
	}

	bin := ""
	if os.Getenv("CI") != "" || hasChromium() {
		bin = chromium(t)
		cells, dom := pageRows(t, bin, "http://"+addr+"/?limit=0&sort=state")
		c := cells[a+".skip_n"]
		if c == nil || !regexp.MustCompile(`^copying \d+%$`).MatchString(stripTags(c["state"])) {
			t.Errorf("the page's row for the table copied: %v", c)
		}
		if c := cells[a+".t"]; c == nil || c["state"] != "streaming" {
			t.Errorf("the page's row for the table streaming: %v", c)
		}
		for _, want := range []string{a + ".skip_n: copied online (selected", `id="copies">1<`} {
			if !strings.Contains(dom, html.EscapeString(want)) && !strings.Contains(dom, want) {
				t.Errorf("the page does not show %q:\n%s", want, tail(dom, 3000))
			}
		}
	}

	close(release)
	h.waitCopied(run, time.Minute)
	h.cfg.Tables.Exclude = nil // for verify
	h.verifyEqual("t", "skip_n")
	waitFor(t, 30*time.Second, "the table streaming on the status", func() bool {
		st = fetchStatus(t, addr)
		n = statusTable(st, a, "skip_n")
		return n != nil && n.State == status.StateStreaming
	})
	if n.Copy != nil || st.Totals.OnlineCopies() != 0 || st.Totals.States[status.StateStreaming] != 2 {
		t.Errorf("after the swap: %+v, totals %+v", n, st.Totals)
	}
	if bin != "" {
		cells, _ := pageRows(t, bin, "http://"+addr+"/?limit=0&sort=state")
		if c := cells[a+".skip_n"]; c == nil || c["state"] != "streaming" {
			t.Errorf("the page's row after the swap: %v", c)
		}
	}
}

func hasChromium() bool {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(name); err == nil {
			return true
		}
	}
	return false
}

// pageRows opens the status page at url and returns each table row's
// cells by class (their inner markup, unescaped), by db.table, and the
// DOM.
func pageRows(t *testing.T, bin, url string) (map[string]map[string]string, string) {
	t.Helper()
	dom := string(runChromium(t, bin, url, "--dump-dom"))
	if !strings.Contains(dom, `data-loaded="true"`) {
		t.Fatalf("the page did not render a status:\n%s", tail(dom, 3000))
	}
	row := regexp.MustCompile(`<tr data-table="([^"]*)">(.*?)</tr>`)
	cell := regexp.MustCompile(`<td class="(\w+)[^"]*"[^>]*>(.*?)</td>`)
	shown := map[string]map[string]string{}
	for _, m := range row.FindAllStringSubmatch(dom, -1) {
		cells := map[string]string{}
		for _, c := range cell.FindAllStringSubmatch(m[2], -1) {
			cells[c[1]] = html.UnescapeString(c[2])
		}
		shown[html.UnescapeString(m[1])] = cells
	}
	return shown, dom
}

// stripTags is a cell's text without its markup (a progress bar).
func stripTags(s string) string { return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(s, "") }

// TestStatusWritersAndCascade: /status.json and `binlog2ch status`'s text
// show a table's writer parked once it has been quiet, and a foreign-key
// cascade while its rows are being derived (held there by a hook).
func TestStatusWritersAndCascade(t *testing.T) {
	h := newHarness(t, 1, "")
	db := h.dbs[0]
	h.exec("CREATE TABLE "+db+".parent (id INT PRIMARY KEY)",
		"CREATE TABLE "+db+".child (id INT PRIMARY KEY, parent_id INT, FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE)",
		"CREATE TABLE "+db+".quiet (id INT PRIMARY KEY)",
		"INSERT INTO "+db+".parent VALUES (1), (2)", "INSERT INTO "+db+".child VALUES (10, 1), (20, 2)", "INSERT INTO "+db+".quiet VALUES (1)")
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	run := h.startWith(testHooks{parkAfter: 200 * time.Millisecond, beforeCascade: func(schema.TableName) {
		once.Do(func() { close(held); <-release })
	}})
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	h.waitCaughtUp(run, time.Minute)
	waitFor(t, 30*time.Second, "quiet's writer parked", func() bool {
		tb := statusTable(fetchStatus(t, addr), db, "quiet")
		return tb != nil && tb.Writer == metrics.WriterParked
	})
	st := fetchStatus(t, addr)
	if st.Totals.Writers[metrics.WriterParked] == 0 {
		t.Errorf("totals: writers %v, want some parked", st.Totals.Writers)
	}
	var text bytes.Buffer
	if err := status.WriteText(&text, &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "parked") {
		t.Errorf("the text status does not show the parked writer:\n%s", text.String())
	}

	h.exec("DELETE FROM " + db + ".parent WHERE id = 1")
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the cascade of the DELETE did not start")
	}
	// The collector may answer from a status built a moment before.
	waitFor(t, 30*time.Second, "the cascade in /status.json", func() bool { st = fetchStatus(t, addr); return st.Cascade != nil })
	if c := st.Cascade; c.Parent != db+".parent" || c.State != "deriving" || c.Since.IsZero() {
		t.Errorf("/status.json during the cascade: %+v, want %s.parent deriving", c, db)
	}
	text.Reset()
	if err := status.WriteText(&text, &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "deriving the cascades of "+db+".parent") {
		t.Errorf("the text status does not show the cascade:\n%s", text.String())
	}
	close(release)
	h.waitCaughtUp(run, time.Minute)
	waitFor(t, 30*time.Second, "no cascade in /status.json once done", func() bool { return fetchStatus(t, addr).Cascade == nil })
	h.verifyEqual("parent", "child", "quiet")
}
