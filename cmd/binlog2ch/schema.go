package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/chconn"
	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/source"
)

// schemaCmd prints the ClickHouse DDL for the configured tables.
func schemaCmd(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "schema", "-config FILE [-tables db.t1,db.t2] [-profile auto|clickhouse18|modern]")
	var cf configFlags
	cf.register(fs)
	tables := fs.String("tables", "", "comma-separated db.table patterns, globs as tables.include takes them (default: every table the config selects)")
	profile := fs.String("profile", "auto", "ClickHouse capabilities: auto (ask the server), clickhouse18 or modern (no ClickHouse connection)")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	logger, cfg, code := cf.load(e, "schema")
	if code != exitOK {
		return code
	}
	var caps schema.Capabilities
	switch *profile {
	case "auto":
		ch, err := chconn.Open(ctx, cfg, logger)
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch schema: %v\n", err)
			return exitError
		}
		caps, err = schema.DetectCapabilities(ctx, ch)
		ch.Close()
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch schema: %v\n", err)
			return exitError
		}
	case "clickhouse18":
		caps = schema.ClickHouse18
	case "modern":
		caps = schema.ClickHouseModern
	default:
		fmt.Fprintf(e.stderr, "binlog2ch schema: -profile: want auto, clickhouse18 or modern, got %q\n", *profile)
		return exitUsage
	}
	db, err := source.OpenMySQL(ctx, cfg, logger)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch schema: %v\n", err)
		return exitError
	}
	defer db.Close()
	names, err := selectTables(ctx, cfg, db, *tables)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch schema: %v\n", err)
		return exitUsage
	}
	if len(names) == 0 {
		fmt.Fprintln(e.stderr, "binlog2ch schema: no table matches tables.include/exclude")
		return exitError
	}
	fmt.Fprintf(e.stdout, "-- ClickHouse %s\n", caps.Version)
	list := make([]schema.TableName, len(names))
	for i, n := range names {
		list[i] = schema.TableName{Database: n.Database, Table: n.Table}
	}
	defs, err := schema.LoadTables(ctx, db, list)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch schema: %v\n", err)
		return exitError
	}
	failed := 0
	created := map[string]bool{}
	for i, n := range names {
		t, err := defs[list[i]].Table, defs[list[i]].Err
		var target *schema.Target
		if err == nil {
			target, err = schema.Map(t, cfg.ClickHouseDatabase(n.Database), caps, cfg.SchemaOptions(), cfg.TableOptions(n.Database, n.Table))
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "binlog2ch schema: %s: %v\n", n, err)
			failed++
			continue
		}
		if !created[target.Database] {
			created[target.Database] = true
			fmt.Fprintf(e.stdout, "\n%s;\n", target.CreateDatabaseSQL())
		}
		fmt.Fprintf(e.stdout, "\n-- from MySQL %s\n%s;\n", n, target.CreateTableSQL())
		if target.ReadName() != target.Name {
			// In a cluster, the Distributed table to read through.
			defs := make([]string, len(target.Columns))
			for i, c := range target.Columns {
				defs[i] = schema.QuoteIdent(c.Name) + " " + c.Type.String()
			}
			fmt.Fprintf(e.stdout, "\n%s;\n", target.CreateDistributedSQL(defs, ""))
		}
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "binlog2ch schema: %d of %d tables failed\n", failed, len(names))
		return exitError
	}
	return exitOK
}

// selectTables returns the replicated tables that -tables' patterns
// (tablePatterns') match, all of them for an empty list. A name without a
// glob must be one of them: a typo is refused rather than matching nothing.
func selectTables(ctx context.Context, cfg *config.Config, db *sql.DB, list string) ([]schema.TableName, error) {
	all, err := catalog.ListTables(ctx, db, cfg)
	if err != nil || list == "" {
		return all, err
	}
	patterns, err := tablePatterns(list)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	var out []schema.TableName
	for _, t := range all {
		have[t.String()] = true
		if config.MatchPatterns(patterns, t.Database, t.Table) {
			out = append(out, t)
		}
	}
	for _, p := range patterns {
		if !strings.ContainsAny(p, `*?[\`) && !have[p] {
			return nil, fmt.Errorf("-tables: %s does not exist in MySQL or is not selected by tables.include/exclude", p)
		}
	}
	return out, nil
}

// tablePatterns reads -tables: comma-separated db.table patterns, globs as
// tables.include takes them (shop.*, shop.order_?).
func tablePatterns(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if err := config.CheckPattern(p); err != nil {
			return nil, fmt.Errorf("-tables: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}
