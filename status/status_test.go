package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// xss is a name MySQL allows for a table (any character in backquotes):
// shown as markup it would run a script.
const xss = `<img src=x onerror=alert(1)>"'&`

func names(ts []Table) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

// TestQueryApply: the orders, the filter and the limit, with the count
// before the limit.
func TestQueryApply(t *testing.T) {
	tables := []Table{
		{Database: "shop", Table: "orders", Inserted: 100, RowsPerSecond: 5, LagSeconds: 1},
		{Database: "shop", Table: "items", Inserted: 10, RowsPerSecond: 50, LagSeconds: 1},
		{Database: "crm", Table: "people", Inserted: 1000, LagSeconds: 30, QueuedRows: 7},
		{Database: "crm", Table: "notes", Errors: 3, LagSeconds: 1},
	}
	for _, c := range []struct {
		q       Query
		want    []string
		matched int
	}{
		{Query{}, []string{"crm.people", "shop.items", "shop.orders", "crm.notes"}, 4}, // lag, then rows/s
		{Query{Sort: SortRate}, []string{"shop.items", "shop.orders", "crm.people", "crm.notes"}, 4},
		{Query{Sort: SortRows}, []string{"crm.people", "shop.orders", "shop.items", "crm.notes"}, 4},
		{Query{Sort: SortQueued, Limit: 1}, []string{"crm.people"}, 4},
		{Query{Sort: SortErrors, Limit: 1}, []string{"crm.notes"}, 4},
		{Query{Sort: SortName, Filter: "SHOP."}, []string{"shop.items", "shop.orders"}, 2},
		{Query{Sort: "nonsense", Filter: "crm", Limit: 1}, []string{"crm.people"}, 2},
	} {
		got, matched := c.q.Apply(tables)
		if strings.Join(names(got), " ") != strings.Join(c.want, " ") || matched != c.matched {
			t.Errorf("%+v: %v (%d matched), want %v (%d)", c.q, names(got), matched, c.want, c.matched)
		}
	}
	if tables[0].Table != "orders" {
		t.Error("Apply reordered its input")
	}
}

// TestCollector builds a status from the metrics registry: per-table rows
// by operation, queued rows, last flush, errors, fallbacks, snapshot
// progress, the lag from the oldest pending row, rows/s from samples.
func TestCollector(t *testing.T) {
	m := metrics.New()
	orders := m.ForTable(schema.TableName{Database: "shop", Table: "orders"})
	if m.ForTable(orders.Name) != orders {
		t.Fatal("ForTable gave a second Table for one name")
	}
	orders.AddRows(schema.OpInsert, 120)
	orders.AddRows(schema.OpUpdate, 10)
	orders.AddRows(schema.OpDelete, 5)
	orders.SetQueued(42)
	flushed := time.Now().Add(-3 * time.Second)
	orders.Flushed(flushed)
	orders.InsertFailed(errors.New("connection reset"))
	orders.NativeFallback(metrics.FallbackHeaderMismatch)
	m.Errors.WithLabelValues(metrics.StageInsert).Add(1)
	m.NativeFallbacks.WithLabelValues(metrics.FallbackHeaderMismatch).Inc()
	items := m.ForTable(schema.TableName{Database: "shop", Table: "items"})
	items.PendingSince.Store(time.Now().Add(-time.Minute).UnixNano())
	m.Read.Store(time.Now().Add(-2 * time.Second).UnixNano())

	cp := &Checkpoint{Position: "binlog.000003:1234", GTID: "0-7-58"}
	c := NewCollector(m, func() Info {
		return Info{Version: "v1", StartedAt: time.Now().Add(-time.Hour), Phase: "replicating", Ready: true, Alive: true, Checkpoint: cp,
			Source: Server{Product: "MariaDB", Addr: []string{"127.0.0.1:3306"}, Up: true},
			Snapshot: map[schema.TableName]Progress{
				{Database: "shop", Table: "items"}: {State: "done", Copied: 10, Estimated: 10},
				{Database: "shop", Table: "later"}: {State: "waiting", Estimated: 500},
			}}
	})
	// Two samples 2 s apart, 200 rows between them: 100 rows/s.
	now := time.Now()
	c.now = func() time.Time { return now }
	c.Sample()
	orders.AddRows(schema.OpInsert, 200)
	now = now.Add(2 * time.Second)
	c.Sample()

	st := c.Status(Query{Sort: SortName})
	if !st.Running || st.Version != "v1" || st.Checkpoint != cp || st.UptimeSeconds < 3600 || st.Source.Product != "MariaDB" {
		t.Fatalf("daemon fields: %+v", st)
	}
	if got := names(st.Tables); strings.Join(got, " ") != "shop.items shop.later shop.orders" {
		t.Fatalf("tables %v", got)
	}
	o := st.Tables[2]
	if o.Inserted != 320 || o.Updated != 10 || o.Deleted != 5 || o.QueuedRows != 42 || o.Errors != 1 || o.LastError != "connection reset" ||
		o.NativeFallback != metrics.FallbackHeaderMismatch || !o.LastFlush.Equal(flushed.Truncate(0).UTC()) {
		t.Errorf("orders: %+v", o)
	}
	if o.RowsPerSecond != 100 || st.RateWindowSeconds != 2 || st.Totals.RowsPerSecond != 100 {
		t.Errorf("rows/s %v over %v s (total %v), want 100 over 2", o.RowsPerSecond, st.RateWindowSeconds, st.Totals.RowsPerSecond)
	}
	if o.LagSeconds < 2 || o.LagSeconds > 30 {
		t.Errorf("orders' lag %v: nothing pending, want the reader's 2 s", o.LagSeconds)
	}
	if it := st.Tables[0]; it.LagSeconds < 60 || it.Snapshot == nil || !it.Snapshot.Done() {
		t.Errorf("items: %+v, want a lag of a minute from its pending row, snapshot done", it)
	}
	if later := st.Tables[1]; later.Snapshot == nil || later.Snapshot.State != "waiting" || later.Inserted != 0 {
		t.Errorf("a table only the snapshot lists: %+v", later)
	}
	tt := st.Totals
	if tt.Tables != 3 || tt.Inserted != 320 || tt.QueuedRows != 42 || tt.TablesPending != 1 || tt.TablesWithErrors != 1 || tt.TablesFallback != 1 || tt.TablesCopying != 1 || tt.SnapshotEstimated != 510 {
		t.Errorf("totals %+v", tt)
	}
	if st.Errors[metrics.StageInsert] != 1 || st.NativeFallbacks[metrics.FallbackHeaderMismatch] != 1 {
		t.Errorf("errors %v, fallbacks %v", st.Errors, st.NativeFallbacks)
	}

	// A status serves a second; then it is built again.
	orders.AddRows(schema.OpInsert, 1)
	if st := c.Status(Query{Sort: SortName}); st.Tables[2].Inserted != 320 {
		t.Errorf("within a second: %d inserted, want the cached 320", st.Tables[2].Inserted)
	}
	now = now.Add(maxAge)
	if st := c.Status(Query{Sort: SortName}); st.Tables[2].Inserted != 321 {
		t.Errorf("after a second: %d inserted, want 321", st.Tables[2].Inserted)
	}
	// A forgotten table leaves the status and its samples.
	m.Forget(orders.Name)
	c.Sample()
	now = now.Add(maxAge)
	if st := c.Status(Query{Sort: SortName}); len(st.Tables) != 2 || len(c.rings) != 1 {
		t.Errorf("after Forget: tables %v, %d rate samples kept", names(st.Tables), len(c.rings))
	}
}

// TestTextIsSafeForATerminal: a table named with an escape sequence is
// printed quoted, escapes spelt out; the columns and figures are there.
func TestTextIsSafeForATerminal(t *testing.T) {
	st := Status{Running: true, Version: "v1", Phase: "replicating", Ready: true, Alive: true, GeneratedAt: time.Now(),
		Tables: []Table{
			{Database: "shop", Table: "orders", Inserted: 1234567, Updated: 3, RowsPerSecond: 1500, LastFlush: time.Now().Add(-2 * time.Second)},
			{Database: "shop", Table: "\x1b[2Jevil\tname", Errors: 2, LastError: "boom\x1b[0m", LastErrorAt: time.Now()},
		}}
	st.Totals = totals(st.Tables)
	st.Query = Query{Sort: SortLag}.Normalize()
	var b bytes.Buffer
	if err := WriteText(&b, &st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\t") {
		t.Fatalf("control characters reach the terminal:\n%q", out)
	}
	for _, want := range []string{"binlog2ch v1: running", "shop.orders", "1,234,567", "1500", `"shop.\x1b[2Jevil\tname"`, "2.0s ago", `boom\x1b[0m`, "2 of 2 tables"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// Offline: says so and what the checkpoint says.
	b.Reset()
	off := Offline("nothing listens on 127.0.0.1:9188", &Checkpoint{Position: "binlog.000002:4", SavedAt: time.Now().Add(-time.Hour), Store: "/var/lib/binlog2ch"}, nil, nil, time.Now())
	if err := WriteText(&b, &off); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"binlog2ch is not running: nothing listens on 127.0.0.1:9188", "checkpoint  binlog.000002:4", "(1h00m ago)", "in /var/lib/binlog2ch"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("offline: no %q in:\n%s", want, b.String())
		}
	}
}

func TestFormats(t *testing.T) {
	for in, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := Count(in); got != want {
			t.Errorf("Count(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0: "0", 0.44: "0.4", 12.3: "12", 12345: "12.3k", 3.4e6: "3.4M"} {
		if got := Rate(in); got != want {
			t.Errorf("Rate(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{-1: "0.0s", 0.42: "0.4s", 42: "42s", 185: "3m05s", 8000: "2h13m", 100000: "1d03h"} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestHandler serves the page, its assets and the JSON: read-only, with
// headers that keep the page to its own files, and a table named as
// markup escaped in the JSON.
func TestHandler(t *testing.T) {
	m := metrics.New()
	m.ForTable(schema.TableName{Database: "shop", Table: xss}).AddRows(schema.OpInsert, 7)
	for i := range 150 {
		m.ForTable(schema.TableName{Database: "bulk", Table: "t" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)})
	}
	c := NewCollector(m, func() Info { return Info{Version: "v1"} })
	mux := http.NewServeMux()
	c.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	for path, ctype := range map[string]string{"/": "text/html", "/status.js": "text/javascript", "/status.css": "text/css", "/status.json": "application/json"} {
		resp, _ := get(path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
	if resp, _ := get("/nothing-here"); resp.StatusCode != 404 {
		t.Errorf("/nothing-here: %d", resp.StatusCode)
	}
	resp, err := http.Post(srv.URL+"/status.json", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}

	_, body := get("/status.json?sort=name&filter=shop")
	if strings.Contains(body, "<img") || !strings.Contains(body, `\u003cimg src=x onerror=alert(1)\u003e`) {
		t.Errorf("the name is not escaped in the JSON: %s", body)
	}
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Tables) != 1 || st.Tables[0].Table != xss || st.Tables[0].Inserted != 7 || st.Query.Sort != SortName || st.Totals.Tables != 151 {
		t.Errorf("filtered status: %+v", st)
	}
	// Without a limit, DefaultLimit tables; limit=0, all of them.
	_, body = get("/status.json")
	if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Tables) != DefaultLimit || st.TablesMatched != 151 {
		t.Errorf("default limit: %d tables, %d matched (%v)", len(st.Tables), st.TablesMatched, err)
	}
	_, body = get("/status.json?limit=0")
	if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Tables) != 151 {
		t.Errorf("limit=0: %d tables (%v)", len(st.Tables), err)
	}
}

// TestPageLoadsNothingAndWritesNoMarkup: the page's files name no other
// origin, run no inline script, and the script sets no markup from data
// (innerHTML and its kin), so no table name can become an element.
func TestPageLoadsNothingAndWritesNoMarkup(t *testing.T) {
	for _, name := range []string{"index.html", "status.js", "status.css"} {
		data, err := page.ReadFile("page/" + name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(`).FindString(s); m != "" {
			t.Errorf("%s refers to %q", name, m)
		}
		if m := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|setTimeout\("`).FindString(s); m != "" {
			t.Errorf("%s uses %s", name, m)
		}
	}
	html, _ := page.ReadFile("page/index.html")
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(html), -1) {
		if !strings.Contains(tag, `src="status.js"`) {
			t.Errorf("inline or foreign script: %s", tag)
		}
	}
}

// TestRateOfANewTable: a table absent from the last sample had no rows
// then, so its rate shows from its first sample.
func TestRateOfANewTable(t *testing.T) {
	m := metrics.New()
	c := NewCollector(m, func() Info { return Info{} })
	now := time.Now()
	c.now = func() time.Time { return now }
	c.Sample()
	m.ForTable(schema.TableName{Database: "shop", Table: "fresh"}).AddRows(schema.OpInsert, 40)
	now = now.Add(2 * time.Second)
	c.Sample()
	if st := c.Status(Query{}); len(st.Tables) != 1 || st.Tables[0].RowsPerSecond != 20 {
		t.Fatalf("a new table's rate: %+v, want 20 rows/s", st.Tables)
	}
}

// BenchmarkStatus5000Tables: a status of 5000 tables, built anew each
// time (as once a second in the daemon), the default query applied.
func BenchmarkStatus5000Tables(b *testing.B) {
	m := metrics.New()
	for i := range 5000 {
		tm := m.ForTable(schema.TableName{Database: "db" + strconv.Itoa(i%20), Table: "t" + strconv.Itoa(i)})
		tm.AddRows(schema.OpInsert, uint64(i))
	}
	c := NewCollector(m, func() Info { return Info{} })
	now := time.Now()
	c.now = func() time.Time { return now }
	c.Sample()
	b.ResetTimer()
	for range b.N {
		now = now.Add(maxAge)
		st := c.Status(Query{Limit: DefaultLimit})
		if len(st.Tables) != DefaultLimit {
			b.Fatal(len(st.Tables))
		}
	}
}

// BenchmarkSample5000Tables: one rows/s sample of 5000 tables (every 2 s
// in the daemon).
func BenchmarkSample5000Tables(b *testing.B) {
	m := metrics.New()
	for i := range 5000 {
		m.ForTable(schema.TableName{Database: "db", Table: "t" + strconv.Itoa(i)})
	}
	c := NewCollector(m, func() Info { return Info{} })
	for range b.N {
		c.Sample()
	}
}

// TestCopyStates: the tables in the copy state show as waiting, copying
// with their progress, swapping or failed with the error, a table no
// writer has taken yet included; every other table streams; the totals
// count them by state; the state order puts failed first; the JSON and
// the text say it, with what to do about a failed table.
func TestCopyStates(t *testing.T) {
	m := metrics.New()
	m.ForTable(schema.TableName{Database: "shop", Table: "orders"}).AddRows(schema.OpInsert, 5)
	m.ForTable(schema.TableName{Database: "shop", Table: "big"}).AddRows(schema.OpUpdate, 2)
	m.ForTable(schema.TableName{Database: "shop", Table: "swap"})
	m.ForTable(schema.TableName{Database: "shop", Table: "bad"})
	since := time.Now().Add(-90 * time.Second)
	c := NewCollector(m, func() Info {
		return Info{Version: "v1", Phase: "replicating", Ready: true, Alive: true, Copies: map[schema.TableName]Copy{
			{Database: "shop", Table: "big"}:  {State: StateCopying, Reason: "selected", Since: since, Copied: 400, Estimated: 1000},
			{Database: "shop", Table: "next"}: {State: StateWaiting, Reason: "renamed", Since: since},
			{Database: "shop", Table: "swap"}: {State: StateSwapping, Reason: "resync", Since: since, Copied: 10},
			{Database: "shop", Table: "bad"}:  {State: StateFailed, Reason: "add_column", Since: since, Error: "Code: 60. Unknown table"},
		}}
	})
	st := c.Status(Query{Sort: SortState})
	if got := strings.Join(names(st.Tables), " "); got != "shop.bad shop.swap shop.big shop.next shop.orders" {
		t.Fatalf("by state: %s", got)
	}
	want := map[string]string{"shop.bad": StateFailed, "shop.swap": StateSwapping, "shop.big": StateCopying, "shop.next": StateWaiting, "shop.orders": StateStreaming}
	for _, tb := range st.Tables {
		if tb.State != want[tb.Name()] || (tb.State == StateStreaming) != (tb.Copy == nil) {
			t.Errorf("%s: state %q, copy %+v; want %s", tb.Name(), tb.State, tb.Copy, want[tb.Name()])
		}
	}
	if big := st.Tables[2]; big.Updated != 2 || big.Copy.Copied != 400 || big.Copy.Estimated != 1000 || big.Copy.Reason != "selected" {
		t.Errorf("the table copied: %+v %+v", big, big.Copy)
	}
	tt := st.Totals
	if tt.States[StateStreaming] != 1 || tt.States[StateCopying] != 1 || tt.States[StateFailed] != 1 || tt.OnlineCopies() != 3 || tt.CopyCopied != 400 || tt.CopyEstimated != 1000 || tt.TablesCopying != 0 {
		t.Errorf("totals %+v", tt)
	}

	data, err := json.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"state":"copying","copy":{"state":"copying","reason":"selected"`, `"copied":400,"estimated":1000`, `"state":"streaming"`,
		`"error":"Code: 60. Unknown table"`, `"tables_by_state":{`, `"copy_rows_copied":400`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("no %s in the JSON: %s", want, data)
		}
	}
	var raw struct{ Tables []map[string]any }
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if _, has := raw.Tables[4]["copy"]; has || raw.Tables[4]["table"] != "orders" || raw.Tables[4]["state"] != StateStreaming {
		t.Errorf("the streaming table in the JSON: %v", raw.Tables[4])
	}

	var b bytes.Buffer
	if err := WriteText(&b, &st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if testing.Verbose() {
		t.Log("\n" + out)
	}
	for _, want := range []string{
		"online copies     1 copying (400 of ~1,000 rows), 1 waiting, 1 swapping, 1 failed",
		" STATE ", "copying 40%", " streaming ", " waiting ", " swapping ", " failed ",
		"shop.big is being copied online (selected, asked for 1m30s ago): 400 of ~1,000 rows (40%)",
		"shop.next waits for its online copy (renamed",
		"shop.swap: its online copy is complete (resync",
		"shop.bad FAILED (add_column, asked for 1m30s ago): Code: 60. Unknown table. Its binlog events are skipped: fix the cause, then `binlog2ch resync -config FILE -tables shop.bad`, or restart binlog2ch",
		"by state, failed first",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	// With no copy, no copies line.
	plain := NewCollector(m, func() Info { return Info{} }).Status(Query{})
	b.Reset()
	if err := WriteText(&b, &plain); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "online copies") || plain.Totals.States[StateStreaming] != 4 {
		t.Errorf("no copies: %v\n%s", plain.Totals.States, b.String())
	}
}

// TestSnapshotState: while the initial snapshot is not complete every
// table of it is in the snapshot, its own part done or not; once it is,
// they stream.
func TestSnapshotState(t *testing.T) {
	tables := []Table{
		{Database: "a", Table: "done", Snapshot: &Progress{State: "done", Copied: 5, Estimated: 5}},
		{Database: "a", Table: "busy", Snapshot: &Progress{State: "copying", Copied: 1, Estimated: 5}},
		{Database: "a", Table: "other"},
	}
	settle(tables)
	if tables[0].State != StateSnapshot || tables[1].State != StateSnapshot || tables[2].State != StateStreaming {
		t.Errorf("during the snapshot: %s %s %s", tables[0].State, tables[1].State, tables[2].State)
	}
	tables[1].Snapshot.State = "done"
	settle(tables)
	if tables[0].State != StateStreaming || tables[1].State != StateStreaming {
		t.Errorf("after the snapshot: %s %s", tables[0].State, tables[1].State)
	}
	st := Status{Running: true, GeneratedAt: time.Now(), Tables: []Table{{Database: "a", Table: "busy", State: StateSnapshot, Snapshot: &Progress{State: "copying", Copied: 1, Estimated: 4}}}}
	var b bytes.Buffer
	if err := WriteText(&b, &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "snapshot 25%") {
		t.Errorf("no snapshot progress in:\n%s", b.String())
	}
}

// TestOfflineCopies: a stopped daemon's status lists the checkpoint's
// copy state: a table being copied waits for the next start, with the
// rows its progress confirmed, beside those of an unfinished snapshot.
func TestOfflineCopies(t *testing.T) {
	since := time.Now().Add(-time.Hour)
	copies := map[schema.TableName]Copy{
		{Database: "shop", Table: "big"}: CopyOf(&state.TableCopy{State: state.CopyCopying, Reason: state.ReasonSelected, Since: since}, 700),
		{Database: "shop", Table: "bad"}: CopyOf(&state.TableCopy{State: state.CopyFailed, Reason: state.ReasonRenamed, Since: since, Error: "boom"}, 0),
		{Database: "shop", Table: "sw"}:  CopyOf(&state.TableCopy{State: state.CopySwapping, Reason: state.ReasonResync, Since: since}, 0),
	}
	off := Offline("nothing listens on 127.0.0.1:9188", &Checkpoint{Position: "binlog.000002:4"}, nil, copies, time.Now())
	if got := strings.Join(names(off.Tables), " "); got != "shop.bad shop.big shop.sw" {
		t.Fatalf("tables %s", got)
	}
	if big := off.Tables[1]; big.State != StateWaiting || big.Copy.Copied != 700 || big.Copy.Reason != state.ReasonSelected {
		t.Errorf("the copy under way when it stopped: %+v %+v", big, big.Copy)
	}
	if off.Tables[0].State != StateFailed || off.Tables[2].State != StateSwapping || off.Totals.OnlineCopies() != 2 || off.Totals.States[StateFailed] != 1 {
		t.Errorf("states %s %s, totals %+v", off.Tables[0].State, off.Tables[2].State, off.Totals)
	}
	var b bytes.Buffer
	if err := WriteText(&b, &off); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"online copies  2 tables not yet copied whole", "failed         1 tables failed; the next start copies them again",
		"shop.big waits for its online copy (selected, asked for 1h00m ago); 700 rows confirmed so far, which the copy resumes from",
		"shop.bad FAILED (renamed, asked for 1h00m ago): boom. Fix the cause, then start binlog2ch", "shop.sw: its online copy is complete"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("offline: no %q in:\n%s", want, b.String())
		}
	}
}

// TestRetentionText: the headroom line of `binlog2ch status`, in each of
// its cases, and the JSON that carries it (no infinities: JSON has none).
func TestRetentionText(t *testing.T) {
	h := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		r    Retention
		want string
	}{
		{Retention{File: "binlog.000007", HeadroomSeconds: h(2 * 3600), Setting: "binlog_expire_logs_seconds", MarginSeconds: 6 * 3600},
			"binlog retention  binlog.000007 may be purged in 2h00m (binlog_expire_logs_seconds), below the 6h00m margin"},
		{Retention{File: "binlog.000007", HeadroomSeconds: h(7 * 86400), Setting: "expire_logs_days", MarginSeconds: 6 * 3600},
			"binlog retention  binlog.000007 may be purged in 7d00h (expire_logs_days)\n"},
		{Retention{File: "binlog.000007", HeadroomSeconds: h(-5), Setting: "binlog_expire_logs_seconds", MarginSeconds: 60},
			"binlog.000007 is due: the server purges it at its next rotation (binlog_expire_logs_seconds), below the 1m00s margin"},
		{Retention{File: "binlog.000007", Unlimited: true, MarginSeconds: 60}, "binlog.000007: the server purges no binlog by itself"},
		{Retention{File: "binlog.000007", Gone: true, MarginSeconds: 60}, "binlog.000007 is no longer on the server"},
		{Retention{File: "binlog.000007", Unlimited: true, Setting: "max_binlog_total_size", MarginSeconds: 60}, "binlog.000007: not purged while the binlog does not grow (max_binlog_total_size)"},
		{Retention{File: "binlog.000007", Unlimited: true, Active: true, Setting: "max_binlog_total_size", MarginSeconds: 60}, "binlog.000007 is the file the server writes, not purged before it is closed (max_binlog_total_size)"},
	} {
		st := Status{Running: true, GeneratedAt: time.Now(), Retention: &c.r}
		var b bytes.Buffer
		if err := WriteText(&b, &st); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("no %q in:\n%s", c.want, b.String())
		}
		if _, err := json.Marshal(st); err != nil {
			t.Errorf("%+v: %v", c.r, err)
		}
	}
}
