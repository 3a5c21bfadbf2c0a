package cascade

import (
	"log/slog"
	"strings"

	"github.com/binlog2ch/binlog2ch/ddl"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Report logs, at start, the cascading keys among the replicated tables
// (and those of replicated children whose parents are not), and warns
// about what will stop replication. nativeForeignKeys is the server's
// innodb_native_foreign_keys (source.Server); cluster: ClickHouse is a
// cluster. What cannot be derived exactly is found, and stops, at the
// event (PlanEvent, Runner.Run): text keys' collations and tables not
// replicated between a parent and a replicated child are not warned of.
func Report(log *slog.Logger, keys *Keys, replicates func(schema.TableName) bool, nativeForeignKeys string, cluster bool) {
	log = log.With("component", "foreign_keys")
	n := 0
	for _, k := range keys.All() {
		if !k.Cascades() && k.OnDelete != ddl.FKSetDefault && k.OnUpdate != ddl.FKSetDefault {
			continue
		}
		child, parent := replicates(k.Child), replicates(k.Parent)
		switch {
		case child && parent:
			n++
			log.Info("cascading foreign key: binlog2ch derives the child rows InnoDB changes without row events",
				"key", k.Name, "child", k.Child.String(), "columns", strings.Join(k.Columns, ","), "parent", k.Parent.String(),
				"references", strings.Join(k.RefColumns, ","), "on_delete", k.OnDelete.String(), "on_update", k.OnUpdate.String())
			if k.OnDelete == ddl.FKSetDefault || k.OnUpdate == ddl.FKSetDefault {
				log.Warn("SET DEFAULT foreign key: InnoDB refuses it; a cascade through it stops replication", "key", k.Name, "child", k.Child.String())
			}
		case child:
			n++
			// The stream reads the parent's events for them (ReadsFor); a
			// cascade that passes through a table not replicated on its
			// way to a replicated one stops replication (PlanEvent).
			log.Info("cascading foreign key to a table that is not replicated: binlog2ch reads that table's events for the cascades they make in this one, and writes none of its rows",
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
