package replicator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape fetches /metrics and returns the samples whose name and labels
// start with prefix, summed.
func scrape(t *testing.T, addr, prefix string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum, found := 0.0, false
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		sum += v
		found = true
	}
	if !found {
		t.Fatalf("no %s in /metrics:\n%s", prefix, body)
	}
	return sum
}

func probe(t *testing.T, addr, path string) (int, health) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st health
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, st
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

// TestMetricsTellTheTruth scrapes /metrics while rows stream: the row
// counters match the rows written; with ClickHouse killed mid-stream the
// daemon retries, the lag keeps growing and /readyz says not ready; after
// its restart everything recovers and no row is lost or reordered.
func TestMetricsTellTheTruth(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.ClickHouse.External {
		t.Skip("needs a private ClickHouse it can kill")
	}
	a := h.dbs[0]
	run := h.start()
	var addr string
	waitFor(t, 60*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	h.exec("CREATE TABLE " + a + ".m (id INT PRIMARY KEY, v INT)")
	for i := 0; i < 50; i++ {
		h.exec(fmt.Sprintf("INSERT INTO %s.m VALUES (%d, %d), (%d, %d)", a, 2*i, i, 2*i+1, i))
	}
	h.exec("UPDATE "+a+".m SET v = v + 1 WHERE id < 30", "DELETE FROM "+a+".m WHERE id >= 90")
	h.waitCaughtUp(run, 30*time.Second)
	rows := func(op string) float64 {
		return scrape(t, addr, fmt.Sprintf(`binlog2ch_rows_total{database=%q,op=%q,table="m"}`, a, op))
	}
	if ins, upd, del := rows("insert"), rows("update"), rows("delete"); ins != 100 || upd != 30 || del != 10 {
		t.Fatalf("rows_total: insert %v, update %v, delete %v; want 100, 30, 10", ins, upd, del)
	}
	if n := scrape(t, addr, "binlog2ch_events_read_total"); n == 0 {
		t.Fatal("no events counted")
	}
	// Idle and caught up: the heartbeats keep the lag near 0 and it is ready.
	waitFor(t, 60*time.Second, "lag near 0 when idle", func() bool { return scrape(t, addr, "binlog2ch_lag_seconds") < 3 })
	if code, st := probe(t, addr, "/readyz"); code != http.StatusOK || !st.Ready || st.ReadPosition == "" || st.CheckpointAt == "" {
		t.Fatalf("/readyz when caught up: %d %+v", code, st)
	}
	if code, st := probe(t, addr, "/healthz"); code != http.StatusOK || !st.Alive {
		t.Fatalf("/healthz: %d %+v", code, st)
	}

	if err := h.srv.ClickHouse.Kill(); err != nil {
		t.Fatal(err)
	}
	// While it is down: inserts, updates and deletes, counted as MySQL
	// reports them.
	lag1 := scrape(t, addr, "binlog2ch_lag_seconds")
	changed := func(q string) float64 {
		res, err := h.my.Exec(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n, _ := res.RowsAffected()
		return float64(n)
	}
	var ins, upd, del float64
	for i := 100; i < 200; i++ {
		ins += changed(fmt.Sprintf("INSERT INTO %s.m VALUES (%d, %d)", a, i, i))
		upd += changed(fmt.Sprintf("UPDATE %s.m SET v = v + 1 WHERE id = %d", a, i-2))
	}
	del += changed("DELETE FROM " + a + ".m WHERE id % 7 = 0")
	// The lag grows while nothing gets through, well past its idle value
	// (a gauge that froze would never get there).
	waitFor(t, 60*time.Second, fmt.Sprintf("lag growing past %.1f s + 2 s while ClickHouse is down", lag1), func() bool {
		return scrape(t, addr, "binlog2ch_lag_seconds") >= lag1+2
	})
	waitFor(t, 60*time.Second, "failed inserts counted", func() bool {
		return scrape(t, addr, `binlog2ch_errors_total{stage="insert"}`) > 0
	})
	if code, st := probe(t, addr, "/readyz"); code != http.StatusServiceUnavailable || st.Ready || st.ClickHouse {
		t.Fatalf("/readyz with ClickHouse down, after a failed insert: %d %+v", code, st)
	}
	if code, _ := probe(t, addr, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with ClickHouse down: %d (the daemon itself is fine)", code)
	}

	if err := h.srv.ClickHouse.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitCaughtUp(run, 90*time.Second)
	h.assertEqual(a, "m", []string{"id", "v"})
	if !strings.Contains(run.logs.String(), "failed; retrying") {
		t.Errorf("no retry logged during the outage")
	}
	waitFor(t, 15*time.Second, "lag back near 0", func() bool { return scrape(t, addr, "binlog2ch_lag_seconds") < 3 })
	waitFor(t, 15*time.Second, "ready again", func() bool { code, _ := probe(t, addr, "/readyz"); return code == http.StatusOK })
	if gi, gu, gd := rows("insert"), rows("update"), rows("delete"); gi != 100+ins || gu != 30+upd || gd != 10+del {
		t.Fatalf("rows_total after the outage: insert %v, update %v, delete %v; want %v, %v, %v", gi, gu, gd, 100+ins, 30+upd, 10+del)
	}
}

// tableSeries lists the metric families that have a series for the table.
func tableSeries(t *testing.T, r *Replicator, db, table string) []string {
	t.Helper()
	families, err := r.m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var d, tb string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "database":
					d = l.GetValue()
				case "table":
					tb = l.GetValue()
				}
			}
			if d == db && tb == table {
				names = append(names, f.GetName())
				break
			}
		}
	}
	return names
}

// TestMetricSeriesFollowTables: a dropped table's series go, a renamed
// table's series go with its old name, so dashboards do not show tables
// that are gone.
func TestMetricSeriesFollowTables(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".gone (id INT PRIMARY KEY)", "INSERT INTO "+a+".gone VALUES (1), (2)",
		"CREATE TABLE "+a+".old (id INT PRIMARY KEY)", "INSERT INTO "+a+".old VALUES (1)")
	h.waitCaughtUp(run, 30*time.Second)
	for _, table := range []string{"gone", "old"} {
		if s := tableSeries(t, run.r, a, table); !slices.Contains(s, "binlog2ch_rows_total") {
			t.Fatalf("%s: series %v, want binlog2ch_rows_total among them", table, s)
		}
	}
	h.exec("DROP TABLE "+a+".gone", "RENAME TABLE "+a+".old TO "+a+".new", "INSERT INTO "+a+".new VALUES (2)")
	h.waitCaughtUp(run, 30*time.Second)
	for _, table := range []string{"gone", "old"} {
		if s := tableSeries(t, run.r, a, table); len(s) > 0 {
			t.Errorf("%s: series %v remain after DROP/RENAME", table, s)
		}
	}
	if s := tableSeries(t, run.r, a, "new"); !slices.Contains(s, "binlog2ch_rows_total") {
		t.Errorf("new: series %v, want binlog2ch_rows_total among them", s)
	}
}

// TestIdleLagReadsZero: caught up and idle, the lags read 0 while the
// server's heartbeats come, not the time since the last one (a sawtooth up
// to heartbeat_period, which a scrape at about that period samples as a
// slow drift); the first rows after the wait count from their arrival.
func TestIdleLagReadsZero(t *testing.T) {
	h := newHarness(t, 1, "")
	db := h.dbs[0]
	h.exec(fmt.Sprintf("CREATE TABLE `%s`.l (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", db),
		fmt.Sprintf("INSERT INTO `%s`.l (v) VALUES (1), (2)", db))
	run := h.start()
	h.waitCaughtUp(run, time.Minute)
	sample := func() (lag, source []float64) {
		// Three heartbeat periods: samples at every phase of the wait.
		for end := time.Now().Add(3 * h.cfg.MySQL.HeartbeatPeriod); time.Now().Before(end); time.Sleep(23 * time.Millisecond) {
			lag, source = append(lag, run.r.m.Lag()), append(source, run.r.m.SourceLag())
		}
		sort.Float64s(lag)
		sort.Float64s(source)
		return lag, source
	}
	lag, source := sample()
	t.Logf("idle: lag p50 %.3f max %.3f, source lag p50 %.3f max %.3f (%d samples)", lag[len(lag)/2], lag[len(lag)-1], source[len(source)/2], source[len(source)-1], len(lag))
	// The median, not every sample: a heartbeat delayed past its grace on
	// a loaded machine reads as lag, as it should.
	if lag[len(lag)/2] != 0 || source[len(source)/2] != 0 {
		t.Errorf("idle and caught up, the lag reads %.3f s and the source lag %.3f s (medians), want 0", lag[len(lag)/2], source[len(source)/2])
	}
	h.exec(fmt.Sprintf("INSERT INTO `%s`.l (v) VALUES (3)", db))
	h.waitCaughtUp(run, time.Minute)
	waitFor(t, 30*time.Second, "the lag back at 0 after the rows", func() bool { return run.r.m.Lag() == 0 })
	h.verifyEqual("l")
}
