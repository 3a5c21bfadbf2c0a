package replicator

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/hostcost"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/state"
)

// BenchmarkStartupManyTables measures `run`'s first start over many small
// tables (issue 19): BINLOG2CH_BENCH_TABLES (default 2000) tables of three
// rows each over BINLOG2CH_BENCH_DATABASES (default 4) databases, the
// daemon a child process with no checkpoint, so it copies them all
// (initial snapshot) before it follows the binlog. Timed from the start
// to the snapshot state saying complete. Then one row is inserted into
// every table at once, the live path's "2,000 tables appearing", timed
// until ClickHouse holds them. For each phase it logs the statements each
// server received (MySQL's global status, ClickHouse's system.events;
// the benchmark's own are taken off), and the daemon's peak goroutines
// and RSS. Run it with -benchtime 1x; BINLOG2CH_BENCH_LIVE=0 skips the
// live part.
func BenchmarkStartupManyTables(b *testing.B) {
	tables, dbs := 2000, 4
	if v := os.Getenv("BINLOG2CH_BENCH_TABLES"); v != "" {
		tables, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("BINLOG2CH_BENCH_DATABASES"); v != "" {
		dbs, _ = strconv.Atoi(v)
	}
	for i := 0; i < b.N; i++ {
		benchStartup(b, tables, dbs)
	}
}

func benchStartup(b *testing.B, n, dbs int) {
	b.StopTimer()
	// The default batch and checkpoint timing ("batch:" keeps testTiming's
	// out), the snapshot settings from the environment.
	h := newHarness(b, dbs, "batch: {"+os.Getenv("BINLOG2CH_BENCH_BATCH")+"}\nfullsync: {"+os.Getenv("BINLOG2CH_BENCH_FULLSYNC")+"}\n")
	fillStart := time.Now()
	names := h.manyTables(n, 3)
	b.Logf("created %d tables of 3 rows in %d databases in %.1fs", n, dbs, time.Since(fillStart).Seconds())
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(b.TempDir(), "daemon.log")
	if v := os.Getenv("BINLOG2CH_BENCH_LOG"); v != "" {
		logPath = v // kept for reading
		_ = os.Remove(v)
	}
	before := h.queryCounts()
	chCPU0, myCPU0 := hostcost.CPU(h.srv.ClickHouse.Pid()), hostcost.CPU(h.srv.MySQL.Pid())
	_, chSys0 := hostcost.CPUSplit(h.srv.ClickHouse.Pid())
	b.StartTimer()
	start := time.Now()
	d := h.startDaemon(logPath)
	defer func() {
		_ = d.cmd.Process.Kill()
		<-d.done
	}()
	peak := &peakMetrics{}
	stopScrape := peak.scrape(logPath)
	var first time.Duration
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		st, err := snapshot.Load(h.cfg.StateDir, snapshot.InitialFile)
		if err != nil {
			b.Fatal(err)
		}
		if st != nil && first == 0 {
			for _, p := range st.Tables {
				if p.Complete {
					first = time.Since(start)
					break
				}
			}
		}
		if st != nil && st.Complete {
			break
		}
		select {
		case <-d.done:
			data, _ := os.ReadFile(logPath)
			b.Fatalf("the daemon exited:\n%s", tail(string(data), 4000))
		default:
		}
		if time.Now().After(deadline) {
			b.Fatal("the initial snapshot did not end within 30 minutes")
		}
	}
	copied := time.Since(start)
	b.StopTimer()
	snapCounts := h.queryCounts().since(before)
	chCPU, myCPU := hostcost.CPU(h.srv.ClickHouse.Pid())-chCPU0, hostcost.CPU(h.srv.MySQL.Pid())-myCPU0
	_, chSys := hostcost.CPUSplit(h.srv.ClickHouse.Pid())
	b.ReportMetric(copied.Seconds(), "s-to-copy")
	b.ReportMetric(float64(snapCounts.my["Questions"]), "mysql-questions")
	b.ReportMetric(float64(snapCounts.ch["Query"]), "ch-queries")
	b.Logf("initial snapshot of %d tables: first table copied after %.2fs, all after %.2fs; %s; CPU: ClickHouse %.1fs (%.1fs system), MariaDB %.1fs",
		n, first.Seconds(), copied.Seconds(), snapCounts, chCPU.Seconds(), (chSys - chSys0).Seconds(), myCPU.Seconds())
	h.waitCaughtUpProcess(d, logPath, 5*time.Minute)
	g, rss := peak.read()
	b.Logf("during the snapshot: peak goroutines %.0f, peak RSS %.0f MiB (scraped every 2 s)", g, rss/(1<<20))

	if os.Getenv("BINLOG2CH_BENCH_LIVE") != "0" {
		h.benchLive(d, logPath, names, peak)
	}
	stopScrape()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		b.Fatal("daemon did not exit within 60s of SIGTERM")
	}
	ru := d.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
	b.Logf("daemon: %.1f CPU-s in all, peak RSS %.0f MiB", time.Duration(ru.Utime.Nano()+ru.Stime.Nano()).Seconds(), float64(ru.Maxrss)/1024)
}

// benchLive inserts a row into every table at once, the live path's
// "2,000 tables appearing", and logs how long until ClickHouse holds
// them, the statements and what the daemon logged at WARN and above.
func (h *harness) benchLive(d *daemon, logPath string, names []schema.TableName, peak *peakMetrics) {
	b := h.t
	n := len(names)
	before := h.queryCounts()
	chCPU0, myCPU0 := hostcost.CPU(h.srv.ClickHouse.Pid()), hostcost.CPU(h.srv.MySQL.Pid())
	liveStart := time.Now()
	h.insertEach(names, 100)
	var polls uint64
	want := uint64(n * 4)
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		polls++
		if got := h.chRowsIn(h.dbs); got >= want {
			break
		}
		select {
		case <-d.done:
			data, _ := os.ReadFile(logPath)
			b.Fatalf("the daemon exited:\n%s", tail(string(data), 4000))
		default:
		}
		if time.Now().After(deadline) {
			b.Fatal("the rows did not arrive within 30 minutes")
		}
	}
	live := time.Since(liveStart)
	liveCounts := h.queryCounts().since(before)
	liveCounts.my["Questions"] -= uint64(n) // the inserts
	liveCounts.ch["Query"] -= polls
	liveCounts.ch["SelectQuery"] -= polls
	chCPU, myCPU := hostcost.CPU(h.srv.ClickHouse.Pid())-chCPU0, hostcost.CPU(h.srv.MySQL.Pid())-myCPU0
	g, rss := peak.read()
	b.Logf("a row into each of the %d tables: in ClickHouse after %.2fs; %s; CPU: ClickHouse %.1fs, MariaDB %.1fs; peak goroutines %.0f, peak RSS %.0f MiB (scraped every 2 s)",
		n, live.Seconds(), liveCounts, chCPU.Seconds(), myCPU.Seconds(), g, rss/(1<<20))
	data, _ := os.ReadFile(logPath)
	warned := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := warnRe.FindStringSubmatch(line); m != nil {
			warned[m[1]+" "+digits.ReplaceAllString(m[2], "#")]++
		}
	}
	for w, c := range warned {
		b.Logf("daemon log: %d× %s", c, w)
	}

	// Quiet from here: the writers park after a minute (writerParkAfter),
	// and what a daemon with n quiet tables holds is what is left.
	quiet := time.Now()
	for deadline := quiet.Add(5 * time.Minute); ; time.Sleep(time.Second) {
		peak.mu.Lock()
		parked, running, gor, rss := peak.parked, peak.running, peak.nowGoroutines, peak.nowRSS
		peak.mu.Unlock()
		if parked >= float64(n) && running == 0 {
			b.Logf("quiet: all %d writers parked %.0fs after the rows; goroutines %.0f, RSS %.0f MiB", n, time.Since(quiet).Seconds(), gor, rss/(1<<20))
			break
		}
		if time.Now().After(deadline) {
			b.Logf("quiet: after 5 minutes %.0f writers parked, %.0f running; goroutines %.0f", parked, running, gor)
			break
		}
	}
}

// insertEach inserts one row into every table over four connections.
func (h *harness) insertEach(names []schema.TableName, id int) {
	h.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := h.my.Conn(context.Background())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for i := c; i < len(names); i += 4 {
				q := fmt.Sprintf("INSERT INTO `%s`.`%s` VALUES (%d, %d, 'live', '2025-01-01 00:00:00', 1.5)", names[i].Database, names[i].Table, id, i)
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					errs <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
}

// chRowsIn counts the rows of every table of the ClickHouse databases
// (without FINAL), in one query.
func (h *harness) chRowsIn(dbs []string) uint64 {
	h.t.Helper()
	var parts []string
	for _, db := range dbs {
		parts = append(parts, fmt.Sprintf("SELECT count() AS c FROM merge('%s', '^t')", db))
	}
	var n uint64
	if err := h.ch.QueryRow(context.Background(), "SELECT sum(c) FROM ("+strings.Join(parts, " UNION ALL ")+")").Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// peakMetrics follows the daemon's /metrics for its largest goroutine
// count and resident memory.
type peakMetrics struct {
	mu         sync.Mutex
	goroutines float64
	rss        float64
	// The last scrape's: goroutines, RSS, writers parked and running.
	nowGoroutines, nowRSS, parked, running float64
}

var digits = regexp.MustCompile(`[0-9]+`)

var warnRe = regexp.MustCompile(`level=(WARN|ERROR) msg=("[^"]*"|\S+)`)

var listenRe = regexp.MustCompile(`serving /metrics.* listen=(\S+)`)

// scrape scrapes every 2 s (a scrape of 2000 tables' metrics costs the
// daemon about a tenth of a CPU-second) until the returned function is
// called; the address comes from the daemon's log.
func (p *peakMetrics) scrape(logPath string) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		addr := ""
		for wait := time.Duration(0); ; {
			select {
			case <-done:
				return
			case <-time.After(wait):
			}
			if addr == "" {
				data, _ := os.ReadFile(logPath)
				if m := listenRe.FindSubmatch(data); m != nil {
					addr = string(m[1])
				} else {
					wait = 100 * time.Millisecond
					continue
				}
			}
			wait = 2 * time.Second
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 2 {
					continue
				}
				v, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					continue
				}
				p.mu.Lock()
				switch f[0] {
				case "go_goroutines":
					p.goroutines, p.nowGoroutines = max(p.goroutines, v), v
				case "process_resident_memory_bytes":
					p.rss, p.nowRSS = max(p.rss, v), v
				case `binlog2ch_writers{state="parked"}`:
					p.parked = v
				case `binlog2ch_writers{state="running"}`:
					p.running = v
				}
				p.mu.Unlock()
			}
			resp.Body.Close()
		}
	}()
	return func() { close(done); <-stopped }
}

func (p *peakMetrics) read() (goroutines, rss float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.goroutines, p.rss
}
