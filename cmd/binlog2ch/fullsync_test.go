package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestFullSyncCommand runs `binlog2ch fullsync` on good and bad tables: the
// good ones are copied, each bad one (missing, not readable by the user,
// a target whose columns do not match) fails with an error naming it, the
// exit code is 1, and the summary lists every table. -recreate then
// replaces the mismatched target.
func TestFullSyncCommand(t *testing.T) {
	srv, db, my, ch := testDatabase(t, "b2c_cmdfs")
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".good (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO " + db + ".good VALUES (1, 'a'), (2, 'b'), (3, NULL)",
		"CREATE TABLE " + db + ".secret (id INT PRIMARY KEY)",
		"CREATE TABLE " + db + ".mismatch (id INT PRIMARY KEY, v INT)",
		"INSERT INTO " + db + ".mismatch VALUES (1, 10)",
		"CREATE USER " + db + "_u IDENTIFIED BY 'pw'",
		"GRANT SELECT ON " + db + ".good TO " + db + "_u",
		"GRANT SELECT ON " + db + ".mismatch TO " + db + "_u",
		"GRANT BINLOG MONITOR, REPLICATION SLAVE ON *.* TO " + db + "_u",
	} {
		if _, err := my.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"CREATE DATABASE " + db, "CREATE TABLE " + db + ".mismatch (id Int32, v String, _version UInt64, _is_deleted UInt8) ENGINE = ReplacingMergeTree(_version) ORDER BY id"} {
		if err := ch.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeConfig(t, srv, db, "")
	cfg = rewriteUser(t, cfg, srv.MySQL.User, srv.MySQL.Password, db+"_u", "pw")
	var out, errOut bytes.Buffer
	code := dispatch(ctx, &env{stdout: &out, stderr: &errOut}, []string{"fullsync", "-config", cfg, "-log-format", "text",
		"-tables", db + ".good," + db + ".secret," + db + ".mismatch," + db + ".missing"})
	if code != exitError {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitError, out.String(), errOut.String())
	}
	for _, want := range []string{
		db + ".secret: table does not exist",
		db + ".missing: table does not exist",
		db + ".mismatch: target table " + db + ".mismatch does not match the MySQL table: column v is String, the mapping gives Nullable(Int32)",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if !strings.Contains(out.String(), "rows/min") || !strings.Contains(out.String(), db+".good") {
		t.Errorf("no summary:\n%s", out.String())
	}
	var n uint64
	if err := ch.QueryRow(ctx, "SELECT count() FROM "+db+".good FINAL WHERE _is_deleted = 0").Scan(&n); err != nil || n != 3 {
		t.Errorf("good: %d rows (%v), want 3", n, err)
	}

	out.Reset()
	errOut.Reset()
	code = dispatch(ctx, &env{stdout: &out, stderr: &errOut}, []string{"fullsync", "-config", cfg, "-log-format", "text", "-recreate",
		"-tables", db + ".good," + db + ".mismatch"})
	if code != exitOK {
		t.Fatalf("-recreate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	var v int32
	if err := ch.QueryRow(ctx, "SELECT v FROM "+db+".mismatch FINAL WHERE id = 1").Scan(&v); err != nil || v != 10 {
		t.Errorf("mismatch after -recreate: v = %d (%v), want 10", v, err)
	}
	t.Logf("summary:\n%s", out.String())
	if code, _, errOut := runCLI(t, "fullsync", "-config", cfg, "-tables", "other.t"); code != exitUsage || !strings.Contains(errOut, "not selected") {
		t.Errorf("unselected -tables entry: exit %d, %s", code, errOut)
	}
}

// rewriteUser switches a config file written by writeConfig to another
// MySQL user.
func rewriteUser(t *testing.T, path, user, password, newUser, newPassword string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), "user: \""+user+"\", password: \""+password+"\"", "user: \""+newUser+"\", password: \""+newPassword+"\"", 1)
	if s == string(data) {
		t.Fatalf("user not found in %s", data)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
