package chtables

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/schema"
)

// A cluster's tables: each local table has a Distributed table over it
// (schema.Target.ReadName), whose engine names the sharding key rows are
// routed by.

// EnsureDistributed makes the Distributed table over t's local tables have
// the local table's columns. 18.16 refuses ALTER ... ON CLUSTER on a
// Distributed table over replicated shards (code 371, "isn't replicated"),
// so a change recreates it: it holds no data (inserts into it are
// synchronous), and only readers notice the moment it is missing. A table
// recreated keeps its sharding key, or keep (the key of the table it
// replaces after a rename) when it is missing; only a new table gets
// ShardingKey.
func (c *Manager) EnsureDistributed(ctx context.Context, log *slog.Logger, t *schema.Target, keep string) error {
	var local, dist []chColumn
	var engine string
	err := c.retry(ctx, log, metrics.StageSchema, "read ClickHouse schema", func(ctx context.Context) error {
		var err error
		if local, err = c.columns(ctx, t.Database, t.Name); err != nil {
			return err
		}
		if dist, err = c.columns(ctx, t.Database, t.ReadName()); err != nil || len(dist) == 0 {
			return err
		}
		engine, err = c.Engine(ctx, t.Database, t.ReadName())
		return err
	})
	if err != nil {
		return err
	}
	if len(local) == 0 || slices.Equal(local, dist) {
		return nil
	}
	defs := make([]string, len(local))
	for i, c := range local {
		defs[i] = schema.QuoteIdent(c.name) + " " + c.typ
	}
	var stmts []string
	if len(dist) > 0 {
		keep = ShardingExpr(engine)
		stmts = append(stmts, t.ReadRef().DropSQL())
	}
	stmts = append(stmts, t.CreateDistributedSQL(defs, keep))
	for _, s := range stmts {
		if err := c.Exec(ctx, log, s); err != nil {
			return err
		}
	}
	return nil
}

// Engine is a table's engine_full ("" when it does not exist).
func (c *Manager) Engine(ctx context.Context, db, table string) (string, error) {
	return c.tablesColumn(ctx, "engine_full", db, table)
}

// tablesColumn is one of system.tables' columns (engine, engine_full) of a
// table ("" when it does not exist), read again while another table's DROP
// meets the read (droppedMeanwhile).
func (c *Manager) tablesColumn(ctx context.Context, column, db, table string) (string, error) {
	var v string
	var err error
	for range droppedMeanwhileTries {
		err = c.conn.QueryRow(ctx, "SELECT "+column+" FROM system.tables WHERE database = ? AND name = ?", db, table).Scan(&v)
		if !droppedMeanwhile(err) {
			break
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// droppedMeanwhileTries bounds Engine's reads again after a concurrent
// DROP: each read meets one only if a table goes in that very moment.
const droppedMeanwhileTries = 20

// droppedMeanwhile reports whether err is 18.16's answer to a read of
// system.tables' engine_full while a table of the database was being
// dropped: it lists the table, then fails to read its definition, as
// "Table db.t doesn't exist" (code 60) or "Cannot open file
// .../metadata/db/t.sql" (code 107). A read again is good: it no longer
// lists the table, or, when it was the one asked for, finds nothing.
func droppedMeanwhile(err error) bool {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return false
	}
	return ex.Code == 60 || (ex.Code == 107 && strings.Contains(ex.Message, "/metadata/"))
}

// ShardingExpr is the sharding key of a Distributed table's engine_full,
// as the server prints it ("" when there is none or engine is not one).
func ShardingExpr(engine string) string {
	name, rest, ok := strings.Cut(strings.TrimSpace(engine), "(")
	if !ok || strings.TrimSpace(name) != "Distributed" {
		return ""
	}
	if args, _ := chnative.SplitTypeArgs(rest); len(args) >= 4 {
		return strings.TrimSpace(args[3])
	}
	return ""
}

// ShardingColumns parses a Distributed table's engine_full for its
// sharding key: the arguments of cityHash64(a, reinterpretAsString(b), ...),
// or keyless for rand(). Any other expression is refused: binlog2ch cannot
// compute it.
func ShardingColumns(engine string) (cols []block.KeyArg, keyless bool, err error) {
	name, rest, ok := strings.Cut(strings.TrimSpace(engine), "(")
	if !ok || strings.TrimSpace(name) != "Distributed" {
		return nil, false, fmt.Errorf("the table's engine is not Distributed: %q", engine)
	}
	if _, end := chnative.SplitTypeArgs(rest); end < 0 {
		return nil, false, fmt.Errorf("cannot parse the engine %q", engine)
	}
	key := ShardingExpr(engine)
	if key == "" {
		return nil, false, fmt.Errorf("the Distributed table has no sharding key (%q): every row would go to one shard", engine)
	}
	if strings.ReplaceAll(key, " ", "") == "rand()" {
		return nil, true, nil
	}
	inner, ok := strings.CutPrefix(key, "cityHash64(")
	args, end := chnative.SplitTypeArgs(inner)
	if !ok || end != len(inner)-1 {
		return nil, false, fmt.Errorf("binlog2ch computes only cityHash64(columns) or rand() as a sharding key, not %s", key)
	}
	for _, a := range args {
		a = strings.TrimSpace(a)
		var arg block.KeyArg
		if in, ok := strings.CutPrefix(a, "reinterpretAsString("); ok && strings.HasSuffix(in, ")") {
			a, arg.Reinterpret = strings.TrimSpace(in[:len(in)-1]), true
		}
		if arg.Column, err = identifier(a); err != nil {
			return nil, false, fmt.Errorf("sharding key %s: %w", key, err)
		}
		cols = append(cols, arg)
	}
	return cols, false, nil
}

// identifier unquotes a column name as ClickHouse prints it: bare, or in
// backquotes or double quotes with backslash escapes.
func identifier(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty argument")
	}
	if q := s[0]; q == '`' || q == '"' {
		if len(s) < 2 || s[len(s)-1] != q {
			return "", fmt.Errorf("cannot parse %s", s)
		}
		var b strings.Builder
		for i := 1; i < len(s)-1; i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s)-1 {
				i++
				switch s[i] {
				case '0':
					c = 0
				case 'n':
					c = '\n'
				case 't':
					c = '\t'
				default:
					c = s[i]
				}
			}
			b.WriteByte(c)
		}
		return b.String(), nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return "", fmt.Errorf("%s is not a column", s)
		}
	}
	return s, nil
}
