package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Ceiling is ClickHouse's own client inserting the rows the catch-up
// replicated, from a Native dump of them (clickhouse-client, INSERT ...
// FORMAT Native): no MySQL, no binlog, no decoding, the insert alone. The
// catch-up's rate over it (Ratio) is how close binlog2ch comes to what
// the server takes.
type Ceiling struct {
	Rows       uint64  `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerMin float64 `json:"rows_per_min"`
	// CatchUps are the catch-up's runs: the scenario's, then the same
	// catch-up again before each later insert of the client's (the two
	// alternated: both meet the machine's moods alike).
	CatchUps []CatchUpRun `json:"catch_up_runs,omitempty"`
	// Ratio is the fastest catch-up's rows/min over RowsPerMin, the
	// client's fastest; FirstRatio the scenario's own catch-up's (the
	// only one before 2026-12-07) over the same.
	Ratio      float64 `json:"catch_up_ratio"`
	FirstRatio float64 `json:"first_catch_up_ratio,omitempty"`
	// CHCPUSeconds is what ClickHouse spent on the insert.
	CHCPUSeconds float64 `json:"clickhouse_cpu_seconds,omitempty"`
	// ClientCPUSeconds is what clickhouse-client spent (user+sys).
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
	// Client is the clickhouse-client command run.
	Client string `json:"client"`
	// RunSeconds are the times of each of the client's inserts; the
	// fastest is the ceiling.
	RunSeconds []float64 `json:"run_seconds,omitempty"`
}

// clientBinary is ClickHouse's client: clickhouse-client, or the
// clickhouse binary's client mode ("" when neither is installed).
func clientBinary() []string {
	if p, err := exec.LookPath("clickhouse-client"); err == nil {
		return []string{p}
	}
	if p, err := exec.LookPath("clickhouse"); err == nil {
		return []string{p, "client"}
	}
	return nil
}

// ceiling measures Ceiling for table's rows, the catch-up's: dumped in
// Native from ClickHouse, then inserted by clickhouse-client into a new
// table of the same definition, timed from the client's start to its
// exit, ceilingRuns times; again, when not nil, repeats the catch-up
// before each insert after the first. Why none was measured, when none
// was (no client, a cluster).
func (r *run) ceiling(ctx context.Context, table string, catchUp Scenario, again func(context.Context) (CatchUpRun, error)) (*Ceiling, string, error) {
	client := clientBinary()
	switch {
	case client == nil:
		return nil, "clickhouse-client is not installed: no ceiling measured", nil
	case r.o.Cluster != "":
		return nil, "a cluster: the ceiling is measured on one server only", nil
	}
	rows := catchUp.RowsInCH
	e := r.o.ClickHouse
	args := slices.Concat(client[1:], []string{"--host", e.Host, "--port", strconv.Itoa(e.Port), "--user", e.User})
	if e.Password != "" {
		args = append(args, "--password", e.Password)
	}
	dump := filepath.Join(r.o.Dir, "ceiling.native")
	defer os.Remove(dump)
	out, err := os.Create(dump)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, client[0], slices.Concat(args, []string{"--query", "SELECT * FROM " + r.db + "." + table + " FORMAT Native"})...)
	cmd.Stdout = out
	msg, err := runClient(cmd)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, "", fmt.Errorf("ceiling: dump %s.%s: %w: %s", r.db, table, err, msg)
	}
	// The server's speed at one insert varies from run to run by more
	// than the differences measured here (ClickHouse's CPU for the same
	// insert read 1.7 to 3.5 s on one machine): the ceiling is the fastest
	// of ceilingRuns inserts, the best the server did, and the catch-up's
	// the fastest of as many.
	var c *Ceiling
	var runs []float64
	catchUps := []CatchUpRun{{Seconds: catchUp.Seconds, RowsPerMin: catchUp.RowsPerMin, CPUPerMRows: catchUp.CPUPerMRows}}
	for i := 0; i < ceilingRuns; i++ {
		if i > 0 && again != nil {
			run, err := again(ctx)
			if err != nil {
				return nil, "", fmt.Errorf("ceiling: the catch-up again: %w", err)
			}
			catchUps = append(catchUps, run)
		}
		one, err := r.quietInsert(ctx, client, args, dump, table, rows, i)
		if err != nil {
			return nil, "", err
		}
		if c == nil || one.Seconds < c.Seconds {
			c = one
		}
		runs = append(runs, one.Seconds)
	}
	c.RunSeconds, c.CatchUps = runs, catchUps
	best := 0.0
	for _, run := range catchUps {
		best = max(best, run.RowsPerMin)
	}
	c.Ratio, c.FirstRatio = best/c.RowsPerMin, catchUp.RowsPerMin/c.RowsPerMin
	return c, "", nil
}

// quietInsert is clientInsert with the catch-up's table not merging: the
// catch-up's parts still merging would share the server with the client,
// which the catch-up did not, and the ceiling would read low. Its merges
// stop and the running ones end before the clock starts.
func (r *run) quietInsert(ctx context.Context, client, args []string, dump, table string, rows uint64, i int) (*Ceiling, error) {
	quiet, err := r.quietMerges(ctx, table)
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	defer quiet()
	return r.clientInsert(ctx, client, args, dump, table, rows, i)
}

// ceilingRuns is how many times the client inserts the dump.
const ceilingRuns = 3

// clientInsert times clickhouse-client inserting the dump into a new table
// of table's definition, its merges stopped (it is dropped after).
func (r *run) clientInsert(ctx context.Context, client, args []string, dump, table string, rows uint64, i int) (*Ceiling, error) {
	into := fmt.Sprintf("%s_ceiling%d", table, i)
	if err := r.ch.Exec(ctx, "CREATE TABLE "+r.db+"."+into+" AS "+r.db+"."+table); err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	defer func() { _ = r.ch.Exec(context.Background(), "DROP TABLE IF EXISTS "+r.db+"."+into) }()
	if err := r.ch.Exec(ctx, "SYSTEM STOP MERGES "+r.db+"."+into); err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	in, err := os.Open(dump)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	insert := exec.CommandContext(ctx, client[0], slices.Concat(args, []string{"--query", "INSERT INTO " + r.db + "." + into + " FORMAT Native"})...)
	insert.Stdin = in
	cpu0 := r.chCPU(ctx)
	start := time.Now()
	msg, err := runClient(insert)
	el := time.Since(start)
	cpu := r.chCPU(ctx)
	if err != nil {
		return nil, fmt.Errorf("ceiling: insert the dump: %w: %s", err, msg)
	}
	var n uint64
	if err := r.ch.QueryRow(ctx, "SELECT count() FROM "+r.db+"."+into).Scan(&n); err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	if n != rows {
		return nil, fmt.Errorf("ceiling: clickhouse-client inserted %d rows of the dump, want %d", n, rows)
	}
	c := &Ceiling{Rows: n, Seconds: el.Seconds(), RowsPerMin: float64(n) / el.Minutes(), CHCPUSeconds: (cpu.cpu - cpu0.cpu).Seconds(),
		Client: filepath.Base(client[0])}
	if ps := insert.ProcessState; ps != nil {
		c.ClientCPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	return c, nil
}

// runClient runs a clickhouse-client command, returning its stderr.
func runClient(cmd *exec.Cmd) (string, error) {
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	return string(stderr.b), err
}

// limitedBuffer keeps the first 4 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// quietMerges stops merges of table and waits until the server runs none
// (of any table); the function it returns starts them again.
func (r *run) quietMerges(ctx context.Context, table string) (func(), error) {
	name := r.db + "." + table
	if err := r.ch.Exec(ctx, "SYSTEM STOP MERGES "+name); err != nil {
		return nil, fmt.Errorf("stop the merges of %s: %w", name, err)
	}
	start := func() { _ = r.ch.Exec(context.Background(), "SYSTEM START MERGES "+name) }
	for deadline := time.Now().Add(10 * time.Minute); ; {
		var n uint64
		if err := r.ch.QueryRow(ctx, "SELECT count() FROM system.merges").Scan(&n); err != nil {
			start()
			return nil, err
		}
		if n == 0 {
			return start, nil
		}
		if time.Now().After(deadline) {
			start()
			return nil, fmt.Errorf("%d merges still running 10 minutes after SYSTEM STOP MERGES %s", n, name)
		}
		select {
		case <-ctx.Done():
			start()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
