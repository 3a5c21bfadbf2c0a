package chtables

import (
	"context"
	"log/slog"
	"strconv"
	"strings"

	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// OldSuffix names where SwapIn moves the replaced table before dropping
// it (verify passes such tables by).
const OldSuffix = "__b2c_old"

func oldName(table string) string { return table + OldSuffix }

// SwapIn puts shadow, which a copy filled with rows of version
// copyVersion, in table's place. First the rows the stream wrote to table
// since the copy's position (their versions are above copyVersion) are
// carried over into shadow: the stream never waits for a copy, so they
// are only in table. Then one RENAME moves table aside and shadow in, and
// the old table is dropped: readers never find the table empty. Run it
// while nothing writes table (the table's writer calls it between
// batches). A shadow that is not there was swapped in already (a restart
// after the swap): swapped is false, and only what the swap left behind
// is dropped. The registry tells that from a shadow dropped outside
// binlog2ch before its swap, whose rows are lost (a TargetChangedError
// naming mysql, the MySQL table): the swap lists table's old name there
// before its RENAME and forgets it with the shadow after.
//
// ClickHouse's EXCHANGE TABLES (Atomic databases) would swap in one step,
// but the RENAME pair runs on every server binlog2ch supports and, under
// ClickHouse's DDL lock, is one step for readers of either table too.
func (c *Manager) SwapIn(ctx context.Context, log *slog.Logger, db, table, shadow string, copyVersion uint64, mysql string) (swapped bool, err error) {
	ref := func(t string) string { return schema.QuoteIdent(db) + "." + schema.QuoteIdent(t) }
	var shadowCols, liveCols []chColumn
	err = c.retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		var err error
		if shadowCols, err = c.columns(ctx, db, shadow); err != nil {
			return err
		}
		liveCols, err = c.columns(ctx, db, table)
		return err
	})
	if err != nil {
		return false, err
	}
	dropOld := "DROP TABLE IF EXISTS " + ref(oldName(table))
	if len(shadowCols) == 0 {
		if err := c.Exec(ctx, log, dropOld, "reason", "left by an earlier swap"); err != nil {
			return false, err
		}
		_, listed := c.reg.columns(db, shadow)
		_, marked := c.reg.columns(db, oldName(table))
		switch {
		case marked && len(liveCols) > 0:
			// The earlier swap's RENAME ran and the daemon stopped before
			// the registry followed it: table is the copy now.
			_, err := c.reg.Swapped(db, shadow, table, columnNames(liveCols))
			return false, err
		case listed || marked:
			// The shadow gone without the swap's RENAME, or the table too
			// after it.
			return false, &TargetChangedError{Table: db + "." + shadow, MySQL: mysql,
				Problem: "no longer exists, though an online copy filled it and had not swapped it in (" + RegistryFile + " in state_dir lists it): the copy's rows are not in " + db + "." + table}
		}
		return false, nil
	}
	// The old name listed marks a swap under way (see above).
	if err := c.reg.Record(db, oldName(table), columnNames(liveCols), nil, true); err != nil {
		return false, err
	}
	if len(liveCols) > 0 {
		live := map[string]bool{}
		for _, col := range liveCols {
			live[col.name] = true
		}
		var common []string
		for _, col := range shadowCols {
			if live[col.name] {
				common = append(common, schema.QuoteIdent(col.name))
			}
		}
		cols := strings.Join(common, ", ")
		// Retried after a failure, it may insert some rows twice, with
		// their versions: the table keeps the newest row of a key.
		carry := "INSERT INTO " + ref(shadow) + " (" + cols + ") SELECT " + cols + " FROM " + ref(table) +
			" WHERE " + schema.QuoteIdent(schema.VersionColumn) + " > " + strconv.FormatUint(copyVersion, 10)
		if err := c.Exec(ctx, log, carry, "reason", "the stream's rows since the copy's position, carried into the copy"); err != nil {
			return false, err
		}
		if err := c.Exec(ctx, log, dropOld); err != nil {
			return false, err
		}
		if err := c.Exec(ctx, log, "RENAME TABLE "+ref(table)+" TO "+ref(oldName(table))+", "+ref(shadow)+" TO "+ref(table)); err != nil {
			return false, err
		}
		if err := c.Exec(ctx, log, dropOld); err != nil {
			return false, err
		}
	} else if err := c.Exec(ctx, log, "RENAME TABLE "+ref(shadow)+" TO "+ref(table)); err != nil {
		return false, err
	}
	_, err = c.reg.Swapped(db, shadow, table, columnNames(shadowCols))
	return true, err
}

func columnNames(cols []chColumn) []string {
	names := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.name
	}
	return names
}
