package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/verify"
)

// TestVerifyCommand checks verify's exit codes and reports: 0 and a table
// when equal, 1 and the differing key (text and -json) after damage, 2 for
// bad flags, a table missing in ClickHouse, a -tables name that is not
// replicated, and a server that cannot be reached. The ClickHouse table is
// written by hand here; the verify package tests replicate with the daemon.
func TestVerifyCommand(t *testing.T) {
	srv, db, my, ch := testDatabase(t, "b2c_cmdverify")
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10) NOT NULL)",
		"INSERT INTO " + db + ".t VALUES (1, 'a'), (2, 'b')",
	} {
		if _, err := my.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id Int32, v String, _version UInt64, _is_deleted UInt8) ENGINE = ReplacingMergeTree(_version) ORDER BY id",
	} {
		if err := ch.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	insert := func(rows ...[]any) {
		t.Helper()
		batch, err := ch.PrepareBatch(ctx, "INSERT INTO "+db+".t (id, v, _version, _is_deleted)")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := batch.Append(r...); err != nil {
				t.Fatal(err)
			}
		}
		if err := batch.Send(); err != nil {
			t.Fatal(err)
		}
	}
	insert([]any{int32(1), "a", uint64(1), uint8(0)}, []any{int32(2), "b", uint64(1), uint8(0)})
	cfg := writeConfig(t, srv, db, "")

	code, out, errOut := runCLI(t, "verify", "-config", cfg, "-log-format", "text")
	if code != exitOK || !strings.Contains(out, "MySQL "+db+" -> ClickHouse "+db) || !strings.Contains(out, "1 table(s): 1 equal") {
		t.Fatalf("equal: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "verify", "-config", cfg, "-json", "-chunk", "1")
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || !rep.OK || len(rep.Tables) != 1 ||
		rep.Tables[0].RowsMySQL != 2 || rep.Tables[0].Chunks != 2 || rep.Tables[0].Status != verify.StatusOK {
		t.Fatalf("equal -json: exit %d, %v\n%s", code, err, out)
	}

	insert([]any{int32(3), "c", uint64(1), uint8(0)})
	code, out, _ = runCLI(t, "verify", "-config", cfg)
	if code != exitError || !strings.Contains(out, "id=3: extra in ClickHouse") || !strings.Contains(out, "MISMATCH") {
		t.Fatalf("damaged: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "verify", "-config", cfg, "-json", "-tables", db+".t")
	rep = verify.Report{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitError || rep.OK || rep.Mismatches != 1 ||
		len(rep.Tables[0].Diffs) != 1 || rep.Tables[0].Diffs[0].Key != "id=3" || rep.Tables[0].Diffs[0].Problem != verify.ExtraInClickHouse {
		t.Fatalf("damaged -json: exit %d, %v\n%s", code, err, out)
	}

	if code, _, errOut := runCLI(t, "verify", "-config", cfg, "-tables", db+".nope"); code != exitUsage || !strings.Contains(errOut, "does not exist in MySQL") {
		t.Errorf("-tables unknown: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "verify", "-config", cfg, "-chunk", "0"); code != exitUsage || !strings.Contains(errOut, "-chunk") {
		t.Errorf("-chunk 0: exit %d, %s", code, errOut)
	}
	if _, err := my.Exec("CREATE TABLE " + db + ".only_mysql (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "verify", "-config", cfg)
	if code != exitUsage || !strings.Contains(out, "ClickHouse table "+db+".only_mysql does not exist") || !strings.Contains(out, "ERROR") {
		t.Errorf("missing ClickHouse table: exit %d\n%s", code, out)
	}

	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(t.TempDir(), "down.yaml")
	if err := os.WriteFile(down, []byte(strings.Replace(string(data), srv.MySQL.Addr(), addr, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "verify", "-config", down); code != exitUsage || !strings.Contains(errOut, "MySQL "+addr) {
		t.Errorf("unreachable MySQL: exit %d, %s", code, errOut)
	}
	code, out, _ = runCLI(t, "verify", "-config", down, "-json")
	rep = verify.Report{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitUsage || rep.OK || !strings.Contains(rep.Error, "MySQL "+addr) {
		t.Errorf("unreachable MySQL -json: exit %d, %v\n%s", code, err, out)
	}
}

// TestVerifyExtraTable checks that a ClickHouse table of binlog2ch's (its
// version column) in the replicated database that MySQL lacks fails verify
// with exit 1, named in the text and in -json, and that -tables takes
// tables.include's patterns: db.* checks it, db.t leaves it out, a bad glob
// is refused.
func TestVerifyExtraTable(t *testing.T) {
	srv, db, my, ch := testDatabase(t, "b2c_cmdverifyx")
	ctx := context.Background()
	for _, q := range []string{"CREATE DATABASE " + db, "CREATE TABLE " + db + ".t (id INT NOT NULL PRIMARY KEY)"} {
		if _, err := my.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".t (id Int32, _version UInt64, _is_deleted UInt8) ENGINE = ReplacingMergeTree(_version) ORDER BY id",
		"CREATE TABLE " + db + ".left (id Int32, _version UInt64, _is_deleted UInt8) ENGINE = ReplacingMergeTree(_version) ORDER BY id",
	} {
		if err := ch.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg := writeConfig(t, srv, db, "")

	for _, tables := range []string{"", db + ".*", db + ".l*"} {
		args := []string{"verify", "-config", cfg}
		if tables != "" {
			args = append(args, "-tables", tables)
		}
		code, out, errOut := runCLI(t, args...)
		if code != exitError || !strings.Contains(out, "extra table "+db+".left (ClickHouse ReplacingMergeTree)") ||
			!strings.Contains(out, "MySQL has no table "+db+".left") || !strings.Contains(out, "1 extra table(s) in ClickHouse") {
			t.Errorf("-tables %q: exit %d\n%s\n%s", tables, code, out, errOut)
		}
	}
	code, out, _ := runCLI(t, "verify", "-config", cfg, "-json")
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitError || rep.OK || len(rep.ExtraTables) != 1 ||
		rep.ExtraTables[0].ClickHouseTable != "left" || rep.ExtraTables[0].MySQL != db+".left" || rep.ExtraTables[0].InMySQL {
		t.Errorf("-json: exit %d, %v\n%s", code, err, out)
	}
	if code, out, errOut := runCLI(t, "verify", "-config", cfg, "-tables", db+".t"); code != exitOK || strings.Contains(out, "extra table") {
		t.Errorf("-tables %s.t: exit %d\n%s\n%s", db, code, out, errOut)
	}
	for _, bad := range []string{db + ".[", "nodot"} {
		if code, _, errOut := runCLI(t, "verify", "-config", cfg, "-tables", bad); code != exitUsage || !strings.Contains(errOut, "-tables: ") {
			t.Errorf("-tables %q: exit %d, %s", bad, code, errOut)
		}
	}
}
