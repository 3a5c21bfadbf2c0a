package verify

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
)

// TestExtraTables replicates two databases, then renames tables out of the
// replicated set (into a database not replicated, and to a name that
// tables.exclude leaves out) while the daemon follows: their ClickHouse
// tables stay, and verify reports each as an extra table, saying why, and
// fails; a leftover's current-state view is named with it. A ClickHouse
// table of the user's own and an online copy's shadow in the same database
// are not reported. Patterns limit both the compared
// tables and the extra ones to their database; a table excluded once
// replicated is reported as not replicated.
func TestExtraTables(t *testing.T) {
	e := newEnv(t, `  exclude: ["DB.skip_*"]`, "")
	second := servertest.Name("b2c_verify2")
	outside := servertest.Name("b2c_verify_out")
	e.cfg.Tables.Include = append(e.cfg.Tables.Include, second+".*")
	t.Cleanup(func() {
		for _, db := range []string{second, outside} {
			_, _ = e.my.Exec("DROP DATABASE IF EXISTS " + db)
			_ = e.ch.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db)
		}
	})
	e.exec("CREATE DATABASE "+second, "CREATE DATABASE "+outside)
	stop := e.startDaemon()
	e.exec("CREATE TABLE DB.keep (id INT PRIMARY KEY, v INT)", "INSERT INTO DB.keep VALUES (1, 1), (2, 2)",
		"CREATE TABLE DB.moved (id INT PRIMARY KEY)", "INSERT INTO DB.moved VALUES (1)",
		"CREATE TABLE DB.hidden (id INT PRIMARY KEY)", "INSERT INTO DB.hidden VALUES (1)",
		"CREATE TABLE "+second+".other (id INT PRIMARY KEY)", "INSERT INTO "+second+".other VALUES (1)",
		"CREATE TABLE "+second+".gone (id INT PRIMARY KEY)", "INSERT INTO "+second+".gone VALUES (1)")
	e.waitCaughtUp()
	if rep := e.verify(Options{}); !rep.OK || len(rep.ExtraTables) != 0 || len(rep.Tables) != 5 {
		t.Fatalf("before the renames:\n%s", rep.text())
	}

	e.exec("RENAME TABLE DB.moved TO "+outside+".moved", "RENAME TABLE DB.hidden TO DB.skip_hidden",
		"RENAME TABLE "+second+".gone TO "+outside+".gone")
	e.chExec("CREATE VIEW DB.moved_current AS SELECT id FROM DB.moved FINAL WHERE _is_deleted = 0",
		"CREATE TABLE DB.mine (x Int32) ENGINE = MergeTree ORDER BY x",
		"CREATE TABLE DB.keep__b2c_shadow (id Int32, v Nullable(Int32), _version UInt64, _is_deleted UInt8) ENGINE = ReplacingMergeTree(_version) ORDER BY id")
	e.waitCaughtUp()
	stop()

	rep := e.verify(Options{})
	extra := map[string]*ExtraTable{}
	for _, x := range rep.ExtraTables {
		extra[x.name()] = x
	}
	want := []string{e.db + ".hidden", e.db + ".moved", second + ".gone"}
	if rep.OK || len(rep.Tables) != 2 || len(rep.ExtraTables) != len(want) {
		t.Fatalf("after the renames: want extra tables %v:\n%s", want, rep.text())
	}
	for _, name := range want {
		x := extra[name]
		if x == nil || x.InMySQL || x.MySQL != name || !strings.Contains(x.Reason, "MySQL has no table "+name) ||
			!strings.Contains(x.Reason, "DROP TABLE `") {
			t.Errorf("%s: %+v", name, x)
		}
	}
	if x := extra[e.db+".moved"]; x == nil || !slices.Equal(x.Also, []string{e.db + ".moved_current"}) || !strings.Contains(x.Reason, "(and "+e.db+".moved_current)") {
		t.Errorf("moved's view is not named with it: %+v", x)
	}
	text := rep.text()
	for _, s := range []string{"extra table " + e.db + ".moved (ClickHouse ReplacingMergeTree", "extra table " + second + ".gone",
		"2 table(s): 2 equal, 0 differ, 0 error(s); 3 extra table(s) in ClickHouse"} {
		if !strings.Contains(text, s) {
			t.Errorf("text report lacks %q:\n%s", s, text)
		}
	}

	// One database's pattern: its tables and its extra tables only.
	rep = e.verify(Options{Patterns: []string{e.db + ".*"}})
	var names []string
	for _, x := range rep.ExtraTables {
		names = append(names, x.name())
	}
	if rep.OK || len(rep.Tables) != 1 || rep.Tables[0].Table != "keep" || !slices.Equal(names, []string{e.db + ".hidden", e.db + ".moved"}) {
		t.Errorf("-tables %s.*: extra %v\n%s", e.db, names, rep.text())
	}
	rep = e.verify(Options{Patterns: []string{second + ".oth?r"}})
	if !rep.OK || len(rep.Tables) != 1 || rep.Tables[0].Table != "other" || len(rep.ExtraTables) != 0 {
		t.Errorf("-tables %s.oth?r:\n%s", second, rep.text())
	}

	// A replicated table excluded since: MySQL has it, the config leaves it out.
	e.cfg.Tables.Exclude = append(e.cfg.Tables.Exclude, e.db+".keep")
	rep = e.verify(Options{Patterns: []string{e.db + ".*"}})
	var keep *ExtraTable
	for _, x := range rep.ExtraTables {
		if x.ClickHouseTable == "keep" {
			keep = x
		}
	}
	if rep.OK || len(rep.Tables) != 0 || keep == nil || !keep.InMySQL ||
		!strings.Contains(keep.Reason, `MySQL table `+e.db+`.keep is not replicated (tables.exclude[1] "`+e.db+`.keep" excludes it)`) {
		t.Errorf("excluded table: %+v\n%s", keep, rep.text())
	}
}
