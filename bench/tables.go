package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/binlog2ch/binlog2ch/loadgen"

	"github.com/binlog2ch/binlog2ch/hostcost"
)

// The many-tables scenario: single-row INSERTs (autocommit) at a fixed
// total rate spread evenly over many tables, the shape of an OLTP schema
// whose tables mostly trickle. ClickHouse pays per insert (a part each,
// then merges), so what it measures is ClickHouse's CPU, the inserts it
// received and the parts it made, next to the daemon's memory and the
// lag. A companion run sends the same rate into one table; the ratio of
// ClickHouse's CPU between the two is issue 19's criterion.

// TablesRun is one run of the many-tables scenario.
type TablesRun struct {
	Name   string  `json:"name"`
	Tables int     `json:"tables"`
	Rate   float64 `json:"target_rows_per_second"`
	// LoadRows were committed during the run; LoadRowsPerSec is their rate.
	LoadRows       uint64  `json:"load_rows"`
	LoadRowsPerSec float64 `json:"load_rows_per_second"`
	// RowsInMySQL and RowsInCH count the run's tables at the end (one
	// warm-up row per table included); TablesDiffering is how many tables'
	// counts differ between the two (0: every row arrived).
	RowsInMySQL     uint64 `json:"rows_in_mysql"`
	RowsInCH        uint64 `json:"rows_in_clickhouse"`
	TablesDiffering int    `json:"tables_differing"`
	// Seconds is the measured window: from the first INSERT until
	// ClickHouse held every row.
	Seconds float64 `json:"seconds"`

	CHCPUSeconds float64 `json:"clickhouse_cpu_seconds"`
	// CHSystemCPUSeconds is the kernel's part of it (on the development
	// machine most of it: ext4 allocating inodes for the parts' files).
	CHSystemCPUSeconds float64 `json:"clickhouse_system_cpu_seconds"`
	CHCPUSource        string  `json:"clickhouse_cpu_source"`
	// CHIdleCPUShare is ClickHouse's CPU (cores) over a few seconds at rest
	// just before the run: the floor under CHCPUSeconds/Seconds.
	CHIdleCPUShare  float64 `json:"clickhouse_idle_cpu_share"`
	CHInserts       uint64  `json:"clickhouse_inserts"` // system.events InsertQuery
	CHInsertsPerSec float64 `json:"clickhouse_inserts_per_second"`
	// PartsCreated are the level-0 parts the run's inserts made;
	// PartsActive the run's tables' active parts at the end.
	PartsCreated uint64 `json:"clickhouse_parts_created"`
	PartsActive  uint64 `json:"clickhouse_parts_active"`

	DaemonCPUSeconds float64 `json:"daemon_cpu_seconds"`
	DaemonPeakRSSMiB float64 `json:"daemon_peak_rss_mib"`
	// DaemonGoroutines is the largest go_goroutines the daemon's /metrics
	// showed during the run (0: not scraped).
	DaemonGoroutines float64 `json:"daemon_max_goroutines"`

	// Lag is each row's time from its commit in MySQL to its arrival in
	// ClickHouse, matched within its own table, over LagTables tables;
	// WorstTableP99 is the largest of the tables' own p99s.
	Lag           *Lag    `json:"lag"`
	WorstTableP99 float64 `json:"lag_worst_table_p99_seconds"`
	LagTables     int     `json:"lag_tables"`
	LagSource     string  `json:"lag_source"`
	// DaemonLag is binlog2ch_lag_seconds as its /metrics showed it, every
	// scrapeEvery (whole-second binlog timestamps: up to 1 s high).
	DaemonLag *Lag    `json:"daemon_lag,omitempty"`
	Series    []Point `json:"series"`
	// MySQLRows are the rows committed to MySQL by the end of each second
	// of Series.
	MySQLRows []uint64 `json:"mysql_rows,omitempty"`
}

// tablesSampled is how many tables the fallback lag sampler polls, and
// tablesSampleEvery how often: each poll is one query (~2.5 ms of
// ClickHouse's CPU on the development machine), so a few tables often
// rather than all of them.
const (
	tablesSampled     = 10
	tablesSampleEvery = 100 * time.Millisecond
)

// scrapeEvery is how often the daemon's /metrics is read during a run:
// as a fast Prometheus would. Not more often: with 500 tables the page is
// 1.4 MB (15 series a table) and a scrape costs the daemon ~23 ms of CPU
// on the development machine, so once a second would add ~18% to its CPU
// in this scenario; once in 5 s adds ~4%.
const scrapeEvery = 5 * time.Second

// manyTables runs the one-table companion, then the many-table run (the
// companion first, so the many tables' trailing merges do not land in
// it), and the ratio of ClickHouse's CPU between them.
func (r *run) manyTables(ctx context.Context, rep *Report) error {
	for _, n := range []int{1, r.o.Tables} {
		prefix := "many"
		if n == 1 {
			prefix = "one"
		}
		tr, err := r.tablesRun(ctx, prefix, n)
		if err != nil {
			return err
		}
		rep.ManyTables = append(rep.ManyTables, tr)
	}
	if one := rep.ManyTables[0].CHCPUSeconds; one > 0 {
		rep.ManyTablesCPURatio = rep.ManyTables[1].CHCPUSeconds / one
	}
	return nil
}

// tablesRun is one run: a warm-up row into each table (so the daemon's
// writers and ClickHouse's tables exist before the clock starts: creating
// them is start-up cost, not the steady state measured), then Rate rows/s
// for TablesDuration, then a wait until ClickHouse holds every row.
func (r *run) tablesRun(ctx context.Context, prefix string, tables int) (TablesRun, error) {
	name := fmt.Sprintf("%d tables, %.0f rows/s", tables, r.o.TablesRate)
	if tables == 1 {
		name = fmt.Sprintf("1 table, %.0f rows/s", r.o.TablesRate)
	}
	tr := TablesRun{Name: name, Tables: tables, Rate: r.o.TablesRate}
	if err := r.startDaemon(ctx); err != nil {
		return tr, err
	}
	metricsAddr, err := r.metricsAddr(ctx)
	if err != nil {
		return tr, err
	}
	lo := r.loadOptions()
	lo.Table, lo.Tables, lo.Count, lo.BatchSize = prefix+"_1", tables, 1, 1
	names := lo.TableNames()
	match := "^" + prefix + "_[0-9]+$"
	fmt.Fprintf(r.log, "%s: creating the tables and one warm-up row in each\n", name)
	if _, err := loadgen.Run(ctx, *lo); err != nil {
		return tr, err
	}
	if err := r.awaitRows(ctx, match, uint64(tables), 10*time.Minute); err != nil {
		return tr, fmt.Errorf("%s: warm-up: %w", name, err)
	}
	warm, err := r.levelZeroParts(ctx, match)
	if err != nil {
		return tr, err
	}
	if tr.CHIdleCPUShare, err = r.settle(ctx); err != nil {
		return tr, err
	}

	// Arrivals: from the tables' directories when this machine can read
	// them, else from a sampler's queries.
	arr, err := r.watchParts(ctx, match, names)
	if err != nil {
		return tr, err
	}
	defer arr.stop()
	tr.LagSource = arr.source()
	var scr *scraper
	defer func() {
		if scr != nil {
			scr.stop()
		}
	}()

	var (
		mu      sync.Mutex
		commits = map[string][]time.Time{}
		start   time.Time
		cpu0    cpuReading
		ev0     map[string]uint64
		m       *meter
		startEr error
	)
	lo.Count, lo.Create, lo.Rate, lo.Duration = 0, false, r.o.TablesRate, r.o.TablesDuration
	lo.Started = func() {
		if ev0, startEr = r.events(ctx); startEr != nil {
			return
		}
		cpu0 = r.chCPU(ctx)
		m = r.newMeter()
		start = time.Now()
		scr = startScraper(metricsAddr)
	}
	lo.Committed = func(table string, rows int) {
		now := time.Now()
		mu.Lock()
		for range rows {
			commits[table] = append(commits[table], now)
		}
		mu.Unlock()
	}
	fmt.Fprintf(r.log, "%s: single-row INSERTs for %s while the daemon follows\n", name, r.o.TablesDuration)
	res, err := loadgen.Run(ctx, *lo)
	if err == nil {
		err = startEr
	}
	if err != nil {
		return tr, err
	}
	tr.LoadRows, tr.LoadRowsPerSec = res.Inserted, res.RowsPerSecond()
	mu.Lock()
	want := map[string]uint64{}
	for t, c := range commits {
		want[t] = uint64(len(c))
	}
	mu.Unlock()
	end, err := arr.awaitAll(ctx, want, res.Inserted+uint64(tables), r.alive)
	if err != nil {
		return tr, fmt.Errorf("%s: %w", name, err)
	}
	// The measured window ends here; what follows reads its results.
	cpu1 := r.chCPU(ctx)
	ev1, err := r.events(ctx)
	if err != nil {
		return tr, err
	}
	scr.stop()
	arr.stop()
	tr.Seconds = end.Sub(start).Seconds()
	tr.CHCPUSeconds, tr.CHSystemCPUSeconds, tr.CHCPUSource = (cpu1.cpu - cpu0.cpu).Seconds(), (cpu1.sys - cpu0.sys).Seconds(), cpu1.source
	tr.CHInserts = ev1["InsertQuery"] - ev0["InsertQuery"]
	if tr.Seconds > 0 {
		tr.CHInsertsPerSec = float64(tr.CHInserts) / tr.Seconds
	}
	tr.DaemonCPUSeconds, tr.DaemonPeakRSSMiB = (hostcost.CPU(m.pid) - m.cpu).Seconds(), hostcost.PeakRSS(m.pid)
	tr.DaemonGoroutines, tr.DaemonLag = scr.result()

	parts, err := r.levelZeroParts(ctx, match)
	if err != nil {
		return tr, err
	}
	for p := range parts {
		if !warm[p] {
			tr.PartsCreated++
		}
	}
	_ = r.ch.QueryRow(ctx, "SELECT count() FROM system.parts WHERE database = ? AND active AND match(table, ?)", r.db, match).Scan(&tr.PartsActive)

	got := arr.arrivals()
	lags, perTable := tableLags(start, commits, got)
	tr.Lag, tr.LagTables = summarize(lags), len(perTable)
	for _, l := range perTable {
		tr.WorstTableP99 = max(tr.WorstTableP99, summarize(l).P99)
	}
	tr.Series = arrivalSeries(start, end, lags, got)
	tr.MySQLRows = committedBySecond(len(tr.Series), start, commits)

	if err := r.compareCounts(ctx, names, match, &tr); err != nil {
		return tr, err
	}
	fmt.Fprintf(r.log, "%s: ClickHouse %.2f CPU-s in %.1f s, %d inserts; lag p50/p99/max %.2f/%.2f/%.2f s\n",
		name, tr.CHCPUSeconds, tr.Seconds, tr.CHInserts, tr.Lag.P50, tr.Lag.P99, tr.Lag.Max)
	return tr, r.stopDaemon()
}

// metricsAddr is the address the daemon started last serves /metrics on,
// from its log line.
func (r *run) metricsAddr(ctx context.Context) (string, error) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if addr := findListen(r.logSince(r.logOffset)); addr != "" {
			return addr, nil
		}
		if err := r.alive(); err != nil {
			return "", err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("the daemon logged no metrics address within a minute; its log: %s", r.logTail())
		}
	}
}

// findListen finds the "serving /metrics" line in the daemon's JSON log.
func findListen(log []byte) string {
	sc := bufio.NewScanner(strings.NewReader(string(log)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Msg, Listen string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && strings.HasPrefix(line.Msg, "serving /metrics") && line.Listen != "" {
			return line.Listen
		}
	}
	return ""
}

func (r *run) logSince(offset int64) []byte {
	data, _ := os.ReadFile(filepath.Join(r.o.Dir, "daemon.log"))
	if offset > int64(len(data)) {
		return nil
	}
	return data[offset:]
}

// awaitRows waits until the active parts of the tables matching match
// hold n rows (a cheap count: part metadata, no data read).
func (r *run) awaitRows(ctx context.Context, match string, n uint64, limit time.Duration) error {
	for deadline := time.Now().Add(limit); ; time.Sleep(250 * time.Millisecond) {
		var rows uint64
		if err := r.ch.QueryRow(ctx, "SELECT sum(rows) FROM system.parts WHERE database = ? AND active AND match(table, ?)", r.db, match).Scan(&rows); err != nil {
			return err
		}
		if rows >= n {
			return nil
		}
		if err := r.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("ClickHouse holds %d of %d rows after %s", rows, n, limit)
		}
	}
}

// levelZeroParts are the parts inserts made in the matching tables, active
// or merged away (kept for old_parts_lifetime, 8 minutes by default), as
// table/name.
func (r *run) levelZeroParts(ctx context.Context, match string) (map[string]bool, error) {
	rows, err := r.ch.Query(ctx, "SELECT table, name FROM system.parts WHERE database = ? AND level = 0 AND match(table, ?)", r.db, match)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	parts := map[string]bool{}
	for rows.Next() {
		var table, name string
		if err := rows.Scan(&table, &name); err != nil {
			return nil, err
		}
		parts[table+"/"+name] = true
	}
	return parts, rows.Err()
}

// settle waits until ClickHouse merges nothing (earlier scenarios leave
// merges behind that would land in this one's CPU), then returns its CPU
// share over two seconds at rest.
func (r *run) settle(ctx context.Context) (float64, error) {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
		var n uint64
		if err := r.ch.QueryRow(ctx, "SELECT count() FROM system.merges").Scan(&n); err != nil {
			return 0, err
		}
		if n == 0 || time.Now().After(deadline) {
			break
		}
	}
	a := r.chCPU(ctx)
	t := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(2 * time.Second):
	}
	b := r.chCPU(ctx)
	return (b.cpu - a.cpu).Seconds() / time.Since(t).Seconds(), nil
}

// cpuReading is ClickHouse's CPU time so far (sys the kernel's part of
// it) and where it was read.
type cpuReading struct {
	cpu, sys time.Duration
	source   string
}

// chCPU reads the clickhouse-server process's CPU time when its pid is
// known (a private server); otherwise its query threads' CPU from
// system.events, which leaves out background merges.
func (r *run) chCPU(ctx context.Context) cpuReading {
	if pid := r.o.ClickHousePid; pid > 0 {
		user, sys := hostcost.CPUSplit(pid)
		return cpuReading{user + sys, sys, "clickhouse-server process, /proc/<pid>/stat utime+stime"}
	}
	ev, _ := r.events(ctx)
	user := time.Duration(ev["UserTimeMicroseconds"]) * time.Microsecond
	sys := time.Duration(ev["SystemTimeMicroseconds"]) * time.Microsecond
	return cpuReading{user + sys, sys, "system.events UserTimeMicroseconds+SystemTimeMicroseconds (query threads only: background merges not counted)"}
}

// events reads ClickHouse's cumulative counters the scenario uses.
func (r *run) events(ctx context.Context) (map[string]uint64, error) {
	rows, err := r.ch.Query(ctx, "SELECT event, value FROM system.events WHERE event IN ('InsertQuery', 'UserTimeMicroseconds', 'SystemTimeMicroseconds', 'MergedRows', 'MergesTimeMilliseconds')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ev := map[string]uint64{}
	for rows.Next() {
		var k string
		var v uint64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		ev[k] = v
	}
	return ev, rows.Err()
}

// compareCounts counts each table's rows on both sides (after the window).
func (r *run) compareCounts(ctx context.Context, names []string, match string, tr *TablesRun) error {
	chCounts := map[string]uint64{}
	rows, err := r.ch.Query(ctx, "SELECT _table, count() FROM merge(?, ?) GROUP BY _table", r.db, match)
	if err != nil {
		return err
	}
	for rows.Next() {
		var t string
		var n uint64
		if err := rows.Scan(&t, &n); err != nil {
			rows.Close()
			return err
		}
		chCounts[t] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// One UNION ALL per 100 tables: one round trip each, not one per table.
	for i := 0; i < len(names); i += 100 {
		var q []string
		for _, t := range names[i:min(i+100, len(names))] {
			q = append(q, fmt.Sprintf("SELECT '%s', COUNT(*) FROM `%s`.`%s`", t, r.db, t))
		}
		rows, err := r.my.QueryContext(ctx, strings.Join(q, " UNION ALL "))
		if err != nil {
			return err
		}
		for rows.Next() {
			var t string
			var n uint64
			if err := rows.Scan(&t, &n); err != nil {
				rows.Close()
				return err
			}
			tr.RowsInMySQL += n
			if chCounts[t] != n {
				tr.TablesDiffering++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, n := range chCounts {
		tr.RowsInCH += n
	}
	return nil
}

// arrival is rows of a table becoming visible in ClickHouse at a moment.
type arrival struct {
	table string
	at    time.Time
	rows  uint64
}

// tableLags matches, table by table, the k-th row committed with the
// k-th row arrived (by count: rows of one table arrive in binlog order,
// give or take two batches in flight, which can swap two arrival times
// but not the set of them), and returns each row's lag, timed from start
// by its commit, and the lags by table. Rows not arrived have no lag.
func tableLags(start time.Time, commits map[string][]time.Time, got []arrival) ([]lagSample, map[string][]lagSample) {
	byTable := map[string][]arrival{}
	for _, a := range got {
		byTable[a.table] = append(byTable[a.table], a)
	}
	var all []lagSample
	perTable := map[string][]lagSample{}
	for table, cs := range commits {
		as := byTable[table]
		if len(as) == 0 {
			continue
		}
		cs = append([]time.Time(nil), cs...)
		sort.Slice(cs, func(i, j int) bool { return cs[i].Before(cs[j]) })
		sort.SliceStable(as, func(i, j int) bool { return as[i].at.Before(as[j].at) })
		j, arrived := 0, as[0].rows
		for k, c := range cs {
			for arrived < uint64(k+1) && j+1 < len(as) {
				j++
				arrived += as[j].rows
			}
			if arrived < uint64(k+1) {
				break
			}
			s := lagSample{c.Sub(start), max(as[j].at.Sub(c), 0)}
			all = append(all, s)
			perTable[table] = append(perTable[table], s)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].t < all[j].t })
	return all, perTable
}

// arrivalSeries bins the window into seconds: rows arrived in each (of
// the tables observed) and the largest lag of the rows committed in it.
func arrivalSeries(start, end time.Time, lags []lagSample, got []arrival) []Point {
	secs := int(end.Sub(start)/time.Second) + 1
	pts := make([]Point, secs)
	for i := range pts {
		pts[i] = Point{T: float64(i), LagSeconds: -1}
	}
	for _, a := range got {
		if i := int(a.at.Sub(start) / time.Second); i >= 0 && i < secs {
			pts[i].RowsPerSec += float64(a.rows)
		}
	}
	for _, l := range lags {
		if i := int(l.t / time.Second); i >= 0 && i < secs && l.lag.Seconds() > pts[i].LagSeconds {
			pts[i].LagSeconds = l.lag.Seconds()
		}
	}
	return pts
}

// scraper reads the daemon's /metrics every scrapeEvery: the largest
// go_goroutines and every binlog2ch_lag_seconds.
type scraper struct {
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once

	mu         sync.Mutex
	goroutines float64
	lags       []float64
}

func startScraper(addr string) *scraper {
	s := &scraper{done: make(chan struct{}), stopped: make(chan struct{})}
	client := &http.Client{Timeout: 2 * time.Second}
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(scrapeEvery)
		defer tick.Stop()
		for first := true; ; first = false {
			if !first { // the first read at once: a short run still gets one
				select {
				case <-s.done:
					return
				case <-tick.C:
				}
			}
			resp, err := client.Get("http://" + addr + "/metrics")
			if err != nil {
				continue
			}
			g, lag, ok := parseMetrics(resp.Body)
			resp.Body.Close()
			if !ok {
				continue
			}
			s.mu.Lock()
			s.goroutines = max(s.goroutines, g)
			s.lags = append(s.lags, lag)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *scraper) stop() {
	s.once.Do(func() { close(s.done) })
	<-s.stopped
}

func (s *scraper) result() (float64, *Lag) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lags) == 0 {
		return s.goroutines, nil
	}
	ls := make([]lagSample, len(s.lags))
	for i, l := range s.lags {
		ls[i] = lagSample{lag: time.Duration(l * float64(time.Second))}
	}
	return s.goroutines, summarize(ls)
}

// parseMetrics reads go_goroutines and binlog2ch_lag_seconds from the
// Prometheus text format.
func parseMetrics(body io.Reader) (goroutines, lag float64, ok bool) {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	var haveG, haveL bool
	for sc.Scan() {
		line := sc.Text()
		if v, found := strings.CutPrefix(line, "go_goroutines "); found {
			goroutines, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			haveG = true
		} else if v, found := strings.CutPrefix(line, "binlog2ch_lag_seconds "); found {
			lag, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			haveL = true
		}
	}
	return goroutines, lag, haveG && haveL
}

// insertPart is a part an INSERT makes: level 0 (<partition>_<n>_<n>_0).
var insertPart = regexp.MustCompile(`^[^_]+_([0-9]+)_([0-9]+)_0$`)
