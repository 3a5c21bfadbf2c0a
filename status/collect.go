package status

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Info is what the daemon tells the collector beside its metrics; it is
// asked once per build, so it must be cheap (atomics, fields set at start).
type Info struct {
	Version      string
	StartedAt    time.Time
	Phase        string
	Ready, Alive bool
	ReadPosition string
	Checkpoint   *Checkpoint
	Retention    *Retention
	Source       Server
	Target       Server
	// Snapshot is the initial snapshot's progress by table, nil when there
	// is none.
	Snapshot map[schema.TableName]Progress
	// Copies are the tables in the copy state (copied online, or failed)
	// by table; every other table streams.
	Copies map[schema.TableName]Copy
}

// Rates are measured from samples of every table's row count, taken
// every sampleEvery by Run and kept for rateSamples: rows/s is the rows
// between the oldest and the newest sample over the time between them.
// Measured in the daemon rather than in the page, so `binlog2ch status`
// shows rates from a single request.
const (
	sampleEvery = 2 * time.Second
	rateSamples = 6 // a window of up to 10 s
)

// maxAge is how long a built status serves requests: polls from several
// pages and commands then cost one build a second at most.
const maxAge = time.Second

// Collector builds the status from the metrics registry and the daemon's
// Info, and keeps the rows/s samples.
type Collector struct {
	m    *metrics.Metrics
	info func() Info
	now  func() time.Time

	mu      sync.Mutex
	built   *Status // every table, in no order; nil until the first build
	builtAt time.Time
	rings   map[*metrics.Table]*ring
	window  time.Duration // span of the newest rate
	sampled int64         // when the last sample was taken (Unix ns)
}

// NewCollector reads m and asks info for the rest.
func NewCollector(m *metrics.Metrics, info func() Info) *Collector {
	return &Collector{m: m, info: info, now: time.Now, rings: map[*metrics.Table]*ring{}}
}

// Run samples the tables' row counts for rows/s until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	c.Sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.Sample()
		}
	}
}

// ring is one table's newest row counts, with when each was taken.
type ring struct {
	at   [rateSamples]int64 // Unix ns
	rows [rateSamples]uint64
	n    int // samples taken
	rate float64
}

func (r *ring) add(at int64, rows uint64) {
	i := r.n % rateSamples
	r.at[i], r.rows[i] = at, rows
	r.n++
	if r.n < 2 {
		return
	}
	oldest := r.n % rateSamples
	if r.n < rateSamples {
		oldest = 0
	}
	if dt := float64(at-r.at[oldest]) / 1e9; dt > 0 && rows >= r.rows[oldest] {
		r.rate = float64(rows-r.rows[oldest]) / dt
	}
}

// Sample takes one rows/s sample of every table (Run calls it).
func (c *Collector) Sample() {
	tables := c.m.Tables()
	now := c.now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[*metrics.Table]bool, len(tables))
	for _, tm := range tables {
		st := tm.State()
		r := c.rings[tm]
		if r == nil {
			r = &ring{}
			c.rings[tm] = r
			if c.sampled != 0 {
				// Absent from the last sample, the table had no rows then:
				// its rate shows from this sample on.
				r.add(c.sampled, 0)
			}
		}
		r.add(now, st.Rows[schema.OpInsert]+st.Rows[schema.OpUpdate]+st.Rows[schema.OpDelete])
		seen[tm] = true
	}
	c.sampled = now
	for tm, r := range c.rings {
		if !seen[tm] {
			delete(c.rings, tm)
			continue
		}
		if r.n >= 2 {
			c.window = time.Duration(min(r.n, rateSamples)-1) * sampleEvery
		}
	}
}

// Status is the daemon's status with the tables q selects.
func (c *Collector) Status(q Query) Status {
	c.mu.Lock()
	now := c.now()
	if c.built == nil || now.Sub(c.builtAt) >= maxAge || now.Before(c.builtAt) {
		c.built, c.builtAt = c.build(now), now
	}
	st := *c.built
	c.mu.Unlock()
	st.Query = q.Normalize()
	st.Tables, st.TablesMatched = st.Query.Apply(c.built.Tables)
	return st
}

// build assembles the status at now, every table included; c.mu is held.
func (c *Collector) build(now time.Time) *Status {
	in := c.info()
	st := &Status{Running: true, GeneratedAt: now.UTC(), Version: in.Version, Phase: in.Phase, Ready: in.Ready, Alive: in.Alive,
		LagSeconds: c.m.Lag(), SourceLagSeconds: c.m.SourceLag(),
		ReadPosition: in.ReadPosition, Checkpoint: in.Checkpoint, Retention: in.Retention, Source: in.Source, Target: in.Target,
		Errors: counters(c.m.Errors, "stage"), NativeFallbacks: counters(c.m.NativeFallbacks, "reason"),
		RateWindowSeconds: c.window.Seconds()}
	if cs := c.m.Cascading.Load(); cs != nil {
		state := "deriving"
		if cs.Holding {
			state = "holding"
		}
		st.Cascade = &Cascade{Parent: cs.Parent, State: state, Since: cs.Since.UTC()}
	}
	if !in.StartedAt.IsZero() {
		st.StartedAt = in.StartedAt.UTC()
		st.UptimeSeconds = now.Sub(in.StartedAt).Seconds()
	}
	snap := in.Snapshot
	tables := c.m.Tables()
	st.Tables = make([]Table, 0, len(tables))
	seen := make(map[schema.TableName]bool, len(tables))
	for _, tm := range tables {
		s := tm.State()
		t := Table{Database: tm.Name.Database, Table: tm.Name.Table,
			Inserted: s.Rows[schema.OpInsert], Updated: s.Rows[schema.OpUpdate], Deleted: s.Rows[schema.OpDelete],
			LagSeconds: st.SourceLagSeconds, QueuedRows: s.Queued, Errors: s.Errors, NativeFallback: s.Fallback,
			AmbiguousInserts: s.Ambiguous, Writer: s.Writer}
		if r := c.rings[tm]; r != nil {
			t.RowsPerSecond = r.rate
		}
		if s.PendingSince != 0 {
			t.LagSeconds = max(t.LagSeconds, now.Sub(time.Unix(0, s.PendingSince)).Seconds())
		}
		if s.LastFlush != 0 {
			t.LastFlush = time.Unix(0, s.LastFlush).UTC()
		}
		if e := s.LastError; e != nil {
			t.LastError, t.LastErrorAt = e.Message, e.At.UTC()
		}
		if p, ok := snap[tm.Name]; ok {
			t.Snapshot = &p
		}
		if cp, ok := in.Copies[tm.Name]; ok {
			t.Copy = &cp
		}
		st.Tables = append(st.Tables, t)
		seen[tm.Name] = true
	}
	// Tables the snapshot or the copy state lists that no writer has
	// taken yet.
	for name, p := range snap {
		if !seen[name] {
			t := Table{Database: name.Database, Table: name.Table, LagSeconds: st.SourceLagSeconds, Snapshot: &p}
			if cp, ok := in.Copies[name]; ok {
				t.Copy = &cp
			}
			st.Tables = append(st.Tables, t)
			seen[name] = true
		}
	}
	for name, cp := range in.Copies {
		if !seen[name] {
			st.Tables = append(st.Tables, Table{Database: name.Database, Table: name.Table, LagSeconds: st.SourceLagSeconds, Copy: &cp})
		}
	}
	settle(st.Tables)
	st.Totals = totals(st.Tables)
	return st
}

// totals adds the tables up.
func totals(tables []Table) Totals {
	tt := Totals{Tables: len(tables), States: map[string]int{}}
	for i := range tables {
		t := &tables[i]
		tt.States[t.State]++
		if t.Writer != "" {
			if tt.Writers == nil {
				tt.Writers = map[string]int{}
			}
			tt.Writers[t.Writer]++
		}
		if c := t.Copy; c != nil && c.State == StateCopying {
			tt.CopyCopied += c.Copied
			tt.CopyEstimated += max(c.Estimated, c.Copied)
		}
		tt.Inserted += t.Inserted
		tt.Updated += t.Updated
		tt.Deleted += t.Deleted
		tt.RowsPerSecond += t.RowsPerSecond
		tt.QueuedRows += t.QueuedRows
		if t.QueuedRows > 0 {
			tt.TablesPending++
		}
		if t.Errors > 0 {
			tt.TablesWithErrors++
		}
		if t.NativeFallback != "" {
			tt.TablesFallback++
		}
		if p := t.Snapshot; p != nil {
			tt.SnapshotCopied += p.Copied
			tt.SnapshotEstimated += max(p.Estimated, p.Copied)
			if !p.Done() {
				tt.TablesCopying++
			}
		}
	}
	return tt
}

// collect reads a vector's series.
func collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil {
			out = append(out, &d)
		}
	}
	return out
}

func label(d *dto.Metric, name string) string {
	for _, l := range d.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// counters reads a counter vector with one label.
func counters(v *prometheus.CounterVec, name string) map[string]uint64 {
	out := map[string]uint64{}
	for _, d := range collect(v) {
		out[label(d, name)] = uint64(d.GetCounter().GetValue())
	}
	return out
}
