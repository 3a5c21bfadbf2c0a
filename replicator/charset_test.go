package replicator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/state"
)

// charsetTable has text columns in single-byte, double-byte and Unicode
// character sets other than UTF-8, one of them in the key, an ENUM with
// latin1 labels, and a BLOB beside them that must stay byte-exact.
const charsetTable = `CREATE TABLE %s.cs (
  id INT NOT NULL, k VARCHAR(20) CHARACTER SET latin1 NOT NULL,
  l VARCHAR(40) CHARACTER SET latin1, g VARCHAR(40) CHARACTER SET gbk, c CHAR(12) CHARACTER SET cp1251,
  t TEXT CHARACTER SET latin2, u VARCHAR(20) CHARACTER SET utf16, s VARCHAR(20) CHARACTER SET sjis,
  e ENUM('café','naïve') CHARACTER SET latin1, b BLOB,
  PRIMARY KEY (id, k)) DEFAULT CHARSET=utf8mb4`

// TestCharsets: text in latin1, gbk, cp1251, latin2, utf16 and sjis lands
// in ClickHouse as UTF-8 both from the snapshot and from the binlog
// (MySQL's own reading over utf8mb4 is the reference), BLOBs stay
// byte-exact, and verify finds the sides equal.
func TestCharsets(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	cols := []string{"id", "k", "l", "g", "c", "t", "u", "s", "e"}
	h.exec(strings.ReplaceAll(charsetTable, "%s", a),
		"INSERT INTO "+a+".cs VALUES (1, 'clé', 'café crème', '中文测试', 'Привет', 'Żółć', 'ÅÄÖ 😀', 'ﾃｽﾄ 日本', 'café', X'E9FF00')")
	// No checkpoint: the first row comes through the snapshot.
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	h.waitCaughtUp(run, 60*time.Second)
	h.exec("INSERT INTO "+a+".cs VALUES (2, 'naïve', 'déjà vu', '汉字', 'Ёлка', 'Łódź', 'Ω', '〜‖−¢', 'naïve', X'C3A9')",
		"UPDATE "+a+".cs SET l = CONCAT(l, ' ü'), g = '简体', c = 'Щука' WHERE id = 1",
		"INSERT INTO "+a+".cs (id, k) VALUES (3, 'ß')")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "cs", cols)
	for _, c := range []struct{ id, col, want string }{
		{"2", "l", "64C3A96AC3A0207675"}, // 'déjà vu' in UTF-8, from the binlog
		{"1", "t", "C5BBC3B3C582C487"},   // 'Żółć', from the snapshot
		{"1", "b", "E9FF00"},             // a BLOB as it is
		{"2", "b", "C3A9"},
	} {
		var got string
		if err := h.ch.QueryRow(context.Background(), "SELECT hex("+c.col+") FROM "+a+".cs FINAL WHERE id = "+c.id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("row %s column %s: ClickHouse holds %s, want %s", c.id, c.col, got, c.want)
		}
	}
	h.verifyEqual("cs")
}

// TestCharsetWithoutConversion: a text column in a character set binlog2ch
// cannot convert as MySQL does stops the daemon at the table's first rows,
// naming the table, the column, the set and the ways out; nothing of it
// reaches ClickHouse.
func TestCharsetWithoutConversion(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".b5 (id INT PRIMARY KEY, v VARCHAR(10) CHARACTER SET big5)", "INSERT INTO "+a+".b5 VALUES (1, '中文')")
	err := run.stopped(t, 30*time.Second, "the daemon did not stop on a big5 column")
	wantError(t, err, a+".b5.v", "character set big5", "CHARACTER SET utf8mb4", "exclude_columns", "tables.exclude")
	t.Logf("error: %v", err)
	if h.chTableExists(a, "b5") {
		t.Errorf("%s.b5 was created in ClickHouse", a)
	}
}
