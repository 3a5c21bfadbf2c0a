package cascade

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/catalog"
	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Report logs, at start, the cascading keys among the replicated tables,
// and warns about what cannot be derived. db is the source, which has the
// child columns' collations; nativeForeignKeys is the server's
// innodb_native_foreign_keys (source.Server); cluster: ClickHouse is a
// cluster.
func Report(log *slog.Logger, db *sql.DB, keys *Keys, replicates func(schema.TableName) bool, nativeForeignKeys string, cluster bool) {
	daemon := log
	log = log.With("component", "foreign_keys")
	n := 0
	collations := textKeyCollations(daemon, db, keys)
	for _, k := range keys.All() {
		if !k.Cascades() && k.OnDelete != ddl.FKSetDefault && k.OnUpdate != ddl.FKSetDefault {
			continue
		}
		child, parent := replicates(k.Child), replicates(k.Parent)
		switch {
		case child && parent:
			n++
			for _, c := range k.Columns {
				if coll := collations[k.Child.String()+"."+c]; coll != "" {
					// Derived cascades match the child's key to the
					// parent's byte for byte; MySQL matched it by the
					// collation.
					log.Warn("cascading foreign key on a text column with a collation: binlog2ch matches the child's key to the parent's byte for byte, MySQL by the collation, so a child row whose key differs from its parent's only by letter case, accents or trailing spaces is not cascaded in ClickHouse. Keep such keys identical, or run binlog2ch verify after cascades",
						"key", k.Name, "child", k.Child.String(), "column", c, "collation", coll)
					break
				}
			}
			log.Info("cascading foreign key: binlog2ch derives the child rows InnoDB changes without row events",
				"key", k.Name, "child", k.Child.String(), "columns", strings.Join(k.Columns, ","), "parent", k.Parent.String(),
				"references", strings.Join(k.RefColumns, ","), "on_delete", k.OnDelete.String(), "on_update", k.OnUpdate.String())
			if k.OnDelete == ddl.FKSetDefault || k.OnUpdate == ddl.FKSetDefault {
				log.Warn("SET DEFAULT foreign key: InnoDB refuses it; a cascade through it stops replication", "key", k.Name, "child", k.Child.String())
			}
		case child:
			log.Warn("replicated table with a cascading foreign key to a table that is not replicated: the parent's deletes and updates are not read, so the cascades they make in this table are not applied and ClickHouse keeps rows MySQL no longer has. Replicate the parent too (tables.include), or exclude this table",
				"key", k.Name, "child", k.Child.String(), "parent", k.Parent.String(), "on_delete", k.OnDelete.String(), "on_update", k.OnUpdate.String())
		case parent:
			log.Debug("cascading foreign key into a table that is not replicated; nothing to derive", "key", k.Name, "child", k.Child.String(), "parent", k.Parent.String())
		}
	}
	switch {
	case nativeForeignKeys == "OFF":
		log.Info("the server applies foreign keys above InnoDB (innodb_native_foreign_keys=OFF) and writes its cascades' rows to the binlog: binlog2ch derives nothing for events so flagged", "cascading_keys", n)
	case n > 0 && cluster:
		log.Warn("cascading foreign keys with a ClickHouse cluster: binlog2ch does not derive cascades in a cluster yet, and stops at the first parent event that cascades", "cascading_keys", n)
	case n > 0:
		log.Info("foreign keys read", "cascading_keys", n, "native_foreign_keys", nativeForeignKeys)
	default:
		// Nothing to derive: not worth a line at INFO on every start.
		log.Debug("foreign keys read", "cascading_keys", n, "native_foreign_keys", nativeForeignKeys)
	}
}

// textKeyCollations reads the collations other than binary ones of the
// cascading keys' child columns, as "db.table.column" -> collation; a
// failed read is logged and leaves the map empty.
func textKeyCollations(log *slog.Logger, db *sql.DB, keys *Keys) map[string]string {
	var tables []schema.TableName
	seen := map[schema.TableName]bool{}
	for _, k := range keys.All() {
		if k.Cascades() && !seen[k.Child] {
			seen[k.Child] = true
			tables = append(tables, k.Child)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := catalog.TextCollations(ctx, db, tables)
	if err != nil {
		log.Warn("cannot read the collations of the cascading keys' columns", "error", err)
		return map[string]string{}
	}
	return out
}
