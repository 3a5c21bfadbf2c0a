package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes a table per MySQL database (table, rows in MySQL, rows
// in ClickHouse, status), each mismatch's first differing keys under its
// row, the extra ClickHouse tables with why and what to do, and a summary
// line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	db := ""
	var tw *tabwriter.Writer
	flush := func() {
		if tw != nil {
			_ = tw.Flush()
		}
	}
	for _, t := range r.Tables {
		if tw == nil || t.Database != db {
			flush()
			db = t.Database
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "MySQL %s -> ClickHouse %s\n", t.Database, t.ClickHouseDatabase)
			tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tROWS MYSQL\tROWS CLICKHOUSE\tSTATUS")
		}
		rowsCH := strconv.FormatInt(t.RowsClickHouse, 10)
		rowsMy := strconv.FormatUint(t.RowsMySQL, 10)
		if t.Status == StatusError {
			rowsMy, rowsCH = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Table, rowsMy, rowsCH, t.statusText())
	}
	flush()
	for _, t := range r.Tables {
		if len(t.Diffs) == 0 && len(t.Notes) == 0 && t.Error == "" {
			continue
		}
		fmt.Fprintf(&b, "\n%s.%s (ClickHouse %s.%s):\n", t.Database, t.Table, t.ClickHouseDatabase, t.ClickHouseTable)
		if t.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", t.Error)
		}
		for _, d := range t.Diffs {
			fmt.Fprintf(&b, "  %s: %s\n", d.Key, d.Problem)
			for _, c := range d.Columns {
				fmt.Fprintf(&b, "      %s: MySQL %s, ClickHouse %s", c.Column, c.MySQL, c.ClickHouse)
				if c.Note != "" {
					fmt.Fprintf(&b, " (%s)", c.Note)
				}
				b.WriteByte('\n')
			}
		}
		if t.MoreDiffs {
			b.WriteString("  ... more differing keys not shown\n")
		}
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	for _, x := range r.ExtraTables {
		fmt.Fprintf(&b, "\nextra table %s (ClickHouse %s", x.name(), x.Engine)
		if len(x.Also) > 0 {
			fmt.Fprintf(&b, ", with %s", strings.Join(x.Also, ", "))
		}
		fmt.Fprintf(&b, "):\n  %s\n", x.Reason)
	}
	ok := len(r.Tables) - r.Mismatches - r.Errors
	fmt.Fprintf(&b, "\n%d table(s): %d equal, %d differ, %d error(s)", len(r.Tables), ok, r.Mismatches, r.Errors)
	if len(r.ExtraTables) > 0 {
		fmt.Fprintf(&b, "; %d extra table(s) in ClickHouse", len(r.ExtraTables))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *TableReport) statusText() string {
	switch t.Status {
	case StatusOK:
		if t.Method == MethodCount {
			return "ok (count only)"
		}
		return "ok"
	case StatusMismatch:
		if t.Method == MethodCount {
			return "MISMATCH (count only)"
		}
		return fmt.Sprintf("MISMATCH (%d of %d chunks differ)", t.MismatchedChunks, t.Chunks)
	}
	return "ERROR"
}
