package status

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/binlog2ch/binlog2ch/metrics"
)

// WriteText writes the status for a terminal: the daemon, then one line
// per table shown.
func WriteText(w io.Writer, st *Status) error {
	b := &strings.Builder{}
	if !st.Running {
		writeOffline(b, st)
		_, err := io.WriteString(w, b.String())
		return err
	}
	state := "not ready"
	if st.Ready {
		state = "ready"
	}
	if !st.Alive {
		state += ", not alive (the reader has not checked in for 45 s)"
	}
	fmt.Fprintf(b, "binlog2ch %s: running for %s, %s, %s\n", clean(st.Version), Duration(st.UptimeSeconds), clean(st.Phase), state)
	kv := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(kv, "lag\t%s (the reader is %s behind MySQL)\n", Duration(st.LagSeconds), Duration(st.SourceLagSeconds))
	fmt.Fprintf(kv, "source\t%s\n", server(st.Source, "connected", "not connected"))
	fmt.Fprintf(kv, "target\t%s\n", server(st.Target, "reachable", "not reachable"))
	if st.ReadPosition != "" {
		fmt.Fprintf(kv, "read\t%s\n", clean(st.ReadPosition))
	}
	if cp := st.Checkpoint; cp != nil {
		fmt.Fprintf(kv, "checkpoint\t%s\n", checkpoint(cp, st.GeneratedAt))
	}
	if r := st.Retention; r != nil {
		fmt.Fprintf(kv, "binlog retention\t%s\n", retentionLine(r))
	}
	t := st.Totals
	rate := ""
	if st.RateWindowSeconds > 0 {
		rate = fmt.Sprintf("; %s rows/s over %s", Rate(t.RowsPerSecond), Duration(st.RateWindowSeconds))
	}
	fmt.Fprintf(kv, "rows\t%s inserted, %s updated, %s deleted%s; %s queued\n", Count(t.Inserted), Count(t.Updated), Count(t.Deleted), rate, Count(uint64(max(t.QueuedRows, 0))))
	if t.SnapshotEstimated > 0 || t.TablesCopying > 0 {
		fmt.Fprintf(kv, "snapshot\t%s of ~%s rows copied, %d tables to go\n", Count(t.SnapshotCopied), Count(t.SnapshotEstimated), t.TablesCopying)
	}
	fmt.Fprintf(kv, "errors\t%s\n", nonZero(st.Errors))
	fmt.Fprintf(kv, "native fallbacks\t%s\n", nonZero(st.NativeFallbacks))
	fmt.Fprintf(kv, "tables\t%d (%d with rows queued, %d with failed inserts, %d inserting through clickhouse-go)\n", t.Tables, t.TablesPending, t.TablesWithErrors, t.TablesFallback)
	if c := copiesLine(&t); c != "" {
		fmt.Fprintf(kv, "online copies\t%s\n", c)
	}
	if w := writersLine(t.Writers); w != "" {
		fmt.Fprintf(kv, "writers\t%s\n", w)
	}
	if c := st.Cascade; c != nil {
		fmt.Fprintf(kv, "cascade\t%s\n", cascadeLine(c, st.GeneratedAt))
	}
	kv.Flush()
	if len(st.Tables) > 0 {
		b.WriteByte('\n')
		rows := [][]string{{"TABLE", "INSERTED", "UPDATED", "DELETED", "ROWS/S", "LAG", "QUEUED", "LAST FLUSH", "STATE", "ERRORS", "FALLBACK"}}
		for i := range st.Tables {
			tb := &st.Tables[i]
			flush := "-"
			if !tb.LastFlush.IsZero() {
				flush = Duration(st.GeneratedAt.Sub(tb.LastFlush).Seconds()) + " ago"
			}
			native := "-"
			if tb.NativeFallback != "" {
				native = clean(tb.NativeFallback)
			}
			if len(tb.AmbiguousInserts) > 0 {
				native += " (ambiguous inserts: " + nonZero(tb.AmbiguousInserts) + ")"
			}
			rows = append(rows, []string{clean(tb.Name()), Count(tb.Inserted), Count(tb.Updated), Count(tb.Deleted),
				Rate(tb.RowsPerSecond), Duration(tb.LagSeconds), Count(uint64(max(tb.QueuedRows, 0))), flush, tableState(tb), Count(tb.Errors), native})
		}
		align(b, rows)
	}
	fmt.Fprintf(b, "\n%d of %d tables", len(st.Tables), st.Totals.Tables)
	if st.Query.Filter != "" {
		fmt.Fprintf(b, " (%d matching %s)", st.TablesMatched, strconv.Quote(st.Query.Filter))
	}
	fmt.Fprintf(b, ", by %s\n", sortLabel(st.Query.Sort))
	b.WriteString(copyLines(st.Tables, st.GeneratedAt, true))
	if errs := lastErrors(st.Tables); errs != "" {
		b.WriteString(errs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writersLine counts the tables' writers by state, "" with none.
func writersLine(w map[string]int) string {
	var parts []string
	for _, state := range []string{metrics.WriterRunning, metrics.WriterParked, metrics.WriterStopped} {
		if n := w[state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	return strings.Join(parts, ", ")
}

// cascadeLine says what the cascade under way is doing, since when.
func cascadeLine(c *Cascade, now time.Time) string {
	what := "deriving the cascades of " + clean(c.Parent) + "'s rows in ClickHouse"
	if c.State == "holding" {
		what = "holding a run of " + clean(c.Parent) + "'s deletes, to derive their cascades together"
	}
	return what + ", for " + Duration(now.Sub(c.Since).Seconds())
}

// tableState is a table's STATE cell: streaming, or where its snapshot
// or copy is; a parked or stopped writer's state follows.
func tableState(t *Table) string {
	s := copyState(t)
	if t.Writer == metrics.WriterParked || t.Writer == metrics.WriterStopped {
		s += " (" + t.Writer + ")"
	}
	return s
}

// copyState is tableState without the writer's.
func copyState(t *Table) string {
	switch t.State {
	case StateSnapshot:
		return "snapshot " + progress(t.Snapshot)
	case StateCopying:
		if c := t.Copy; c != nil && c.Estimated > 0 {
			return "copying " + percent(c.Copied, c.Estimated)
		}
	case "":
		return "-"
	}
	return clean(t.State)
}

func percent(n, of uint64) string {
	return fmt.Sprintf("%.0f%%", 100*float64(min(n, of))/float64(of))
}

// copiesLine sums up the tables in the copy state, "" with none.
func copiesLine(t *Totals) string {
	var parts []string
	if n := t.States[StateCopying]; n > 0 {
		s := fmt.Sprintf("%d copying (%s", n, Count(t.CopyCopied))
		if t.CopyEstimated > 0 {
			s += " of ~" + Count(t.CopyEstimated)
		}
		parts = append(parts, s+" rows)")
	}
	for _, state := range []string{StateWaiting, StateSwapping, StateFailed} {
		if n := t.States[state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	return strings.Join(parts, ", ")
}

// copyLines says, for each shown table in the copy state, why it is
// copied and since when, its progress, and for a failed one its error
// and what to do; running: of a running daemon, else of the checkpoint.
func copyLines(tables []Table, now time.Time, running bool) string {
	var b strings.Builder
	for i := range tables {
		t := &tables[i]
		c := t.Copy
		if c == nil {
			continue
		}
		name := clean(t.Name())
		why := ""
		if c.Reason != "" {
			why = " (" + clean(c.Reason)
			if !c.Since.IsZero() {
				why += ", asked for " + Duration(now.Sub(c.Since).Seconds()) + " ago"
			}
			why += ")"
		}
		switch c.State {
		case StateCopying:
			fmt.Fprintf(&b, "%s is being copied online%s: %s", name, why, Count(c.Copied))
			if c.Estimated > 0 {
				fmt.Fprintf(&b, " of ~%s rows (%s)", Count(c.Estimated), percent(c.Copied, c.Estimated))
			} else {
				b.WriteString(" rows")
			}
			b.WriteString(" in its shadow table; the stream applies its events meanwhile\n")
		case StateWaiting:
			fmt.Fprintf(&b, "%s waits for its online copy%s", name, why)
			if c.Copied > 0 {
				fmt.Fprintf(&b, "; %s rows confirmed so far, which the copy resumes from", Count(c.Copied))
			}
			b.WriteString("\n")
		case StateSwapping:
			fmt.Fprintf(&b, "%s: its online copy is complete%s and its shadow table is being swapped in\n", name, why)
		case StateFailed:
			fmt.Fprintf(&b, "%s FAILED%s: %s. ", name, why, clean(truncate(c.Error, 300)))
			if running {
				fmt.Fprintf(&b, "Its binlog events are skipped: fix the cause, then `binlog2ch resync -config FILE -tables %s`, or restart binlog2ch (it copies failed tables again)\n", name)
			} else {
				b.WriteString("Fix the cause, then start binlog2ch: it copies failed tables again\n")
			}
		default:
			fmt.Fprintf(&b, "%s: online copy %s%s\n", name, clean(c.State), why)
		}
		if c.Error != "" && c.State != StateFailed {
			fmt.Fprintf(&b, "  the last attempt failed (tried again): %s\n", clean(truncate(c.Error, 300)))
		}
	}
	return b.String()
}

// align writes rows in columns: the first (names) and the last (words)
// to the left, the figures between to the right.
func align(b *strings.Builder, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			case i == len(r)-1:
				b.WriteString("  " + c)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteByte('\n')
	}
}

// writeOffline is the status of a daemon that did not answer: why, and the
// checkpoint it will resume from.
func writeOffline(b *strings.Builder, st *Status) {
	fmt.Fprintf(b, "binlog2ch is not running: %s\n", clean(st.NotRunning))
	kv := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	if cp := st.Checkpoint; cp != nil {
		fmt.Fprintf(kv, "checkpoint\t%s\n", checkpoint(cp, st.GeneratedAt))
	} else {
		fmt.Fprintf(kv, "checkpoint\tnone: the next start copies every selected table first (initial snapshot), then follows the binlog\n")
	}
	t := st.Totals
	if t.TablesCopying > 0 {
		fmt.Fprintf(kv, "snapshot\tthe initial snapshot is not complete: %d of %d tables to go, %s rows copied; the next start resumes it\n", t.TablesCopying, t.Tables, Count(t.SnapshotCopied))
	}
	if n := t.OnlineCopies(); n > 0 {
		fmt.Fprintf(kv, "online copies\t%d tables not yet copied whole (their events were applied meanwhile); the next start resumes their copies\n", n)
	}
	if n := t.States[StateFailed]; n > 0 {
		fmt.Fprintf(kv, "failed\t%d tables failed; the next start copies them again\n", n)
	}
	kv.Flush()
	b.WriteString(copyLines(st.Tables, st.GeneratedAt, false))
}

// retentionLine is when the source may purge the checkpoint's file.
func retentionLine(r *Retention) string {
	f := clean(r.File)
	switch {
	case r.Gone:
		return f + " is no longer on the server: its changes are lost once binlog2ch has to read it again"
	case (r.Unlimited || r.HeadroomSeconds == nil) && r.Setting == "":
		return f + ": the server purges no binlog by itself"
	case (r.Unlimited || r.HeadroomSeconds == nil) && r.Active:
		return f + " is the file the server writes, not purged before it is closed (" + clean(r.Setting) + ")"
	case r.Unlimited || r.HeadroomSeconds == nil:
		return f + ": not purged while the binlog does not grow (" + clean(r.Setting) + ")"
	}
	h := *r.HeadroomSeconds
	s := fmt.Sprintf("%s may be purged in %s (%s)", f, Duration(h), clean(r.Setting))
	if h <= 0 {
		s = fmt.Sprintf("%s is due: the server purges it at its next rotation (%s)", f, clean(r.Setting))
	}
	if h < r.MarginSeconds {
		s += fmt.Sprintf(", below the %s margin", Duration(r.MarginSeconds))
	}
	return s
}

func checkpoint(cp *Checkpoint, now time.Time) string {
	s := clean(cp.Position)
	if cp.GTID != "" {
		s += ", GTID " + clean(cp.GTID)
	}
	if !cp.SavedAt.IsZero() {
		s += fmt.Sprintf(", saved %s (%s ago)", cp.SavedAt.UTC().Format("2006-01-02 15:04:05 UTC"), Duration(now.Sub(cp.SavedAt).Seconds()))
	}
	if cp.Server != "" {
		s += ", MySQL server " + clean(cp.Server)
	}
	if cp.Store != "" {
		s += ", in " + clean(cp.Store)
	}
	return s
}

func server(s Server, up, down string) string {
	out := clean(s.Product)
	if s.Version != "" {
		out += " " + clean(s.Version)
	}
	if len(s.Addr) > 0 {
		out += " at " + clean(strings.Join(s.Addr, ", "))
	}
	if s.ID != "" {
		out += " (" + clean(s.ID) + ")"
	}
	if s.Cluster != "" {
		out += ", cluster " + clean(s.Cluster)
	}
	if s.Up {
		return out + ": " + up
	}
	return out + ": " + down
}

func progress(p *Progress) string {
	if p == nil {
		return "-"
	}
	switch {
	case p.Done():
		return "done"
	case p.Estimated > 0:
		return fmt.Sprintf("%.0f%%", 100*float64(min(p.Copied, p.Estimated))/float64(p.Estimated))
	}
	return clean(p.State)
}

func nonZero(m map[string]uint64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, clean(k)+" "+Count(m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func sortLabel(s string) string {
	switch s {
	case SortLag:
		return "lag, then rows/s"
	case SortRate:
		return "rows/s"
	case SortState:
		return "state, failed first"
	case SortName:
		return "name"
	}
	return clean(s)
}

// lastErrors lists the shown tables' latest failed inserts.
func lastErrors(tables []Table) string {
	var b strings.Builder
	for i := range tables {
		t := &tables[i]
		if t.LastError != "" {
			fmt.Fprintf(&b, "last failed insert into %s at %s: %s\n", clean(t.Name()), t.LastErrorAt.Format("15:04:05"), clean(truncate(t.LastError, 300)))
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// clean makes a name or message safe for a terminal: one with a control
// character (a MySQL table may be named with escape sequences) or a tab
// (which would break the columns) is shown quoted, escapes spelt out.
func clean(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

// Count prints n with thousands separated: 1,234,567.
func Count(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// Rate prints a rows/s figure: 0, 0.4, 12, 1.2k, 3.4M.
func Rate(r float64) string {
	switch {
	case r <= 0:
		return "0"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 1, 64)
	case r < 1e4:
		return strconv.FormatFloat(r, 'f', 0, 64)
	case r < 1e6:
		return strconv.FormatFloat(r/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(r/1e6, 'f', 1, 64) + "M"
}

// Duration prints seconds the way a person reads them: 0.4s, 12s, 3m05s,
// 2h13m, 3d04h.
func Duration(sec float64) string {
	if sec < 0 {
		sec = 0
	}
	switch {
	case sec < 10:
		return strconv.FormatFloat(sec, 'f', 1, 64) + "s"
	case sec < 60:
		return strconv.FormatFloat(sec, 'f', 0, 64) + "s"
	}
	d := time.Duration(sec) * time.Second
	h, m, s := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case h >= 24:
		return fmt.Sprintf("%dd%02dh", h/24, h%24)
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}
