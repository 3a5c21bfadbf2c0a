package replicator

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/state"
)

// fixedBinTable has MariaDB's UUID, INET4 and INET6 beside a BINARY(16)
// that must stay bytes; fixedBinKeyTable is keyed by a UUID.
const (
	fixedBinTable = `CREATE TABLE %s.fb (
  id INT PRIMARY KEY, u UUID, i4 INET4, i6 INET6, b BINARY(16), nu UUID NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000')`
	fixedBinKeyTable = `CREATE TABLE %s.fbk (u UUID PRIMARY KEY, i6 INET6 NOT NULL, v INT)`
)

// fixedBinRows are UUIDs of versions 1 (stored swapped in the row), 4, 7
// and a non-RFC variant (stored as they are), nil and max; INET6 in
// MariaDB's every shape of text: IPv4-mapped and -compatible, ::, ::1, a
// gap of one word, the longest of two gaps, full.
var fixedBinRows = []string{
	"(1, '6ccd780c-baba-1026-9564-5b8c656024db', '1.2.3.4', '::ffff:1.2.3.4', X'00112233445566778899AABBCCDDEEFF', '01890a5d-ac96-774b-bcce-b302099a8057')",
	"(2, '123e4567-e89b-42d3-a456-426614174000', '0.0.0.0', '::', X'01', '11111111-2222-1333-0444-555555555555')",
	"(3, '01890a5d-ac96-774b-bcce-b302099a8057', '255.255.255.255', '2001:db8:85a3::8a2e:370:7334', NULL, '6ccd780c-baba-1026-9564-5b8c656024db')",
	"(4, '11111111-2222-1333-0444-555555555555', NULL, 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', NULL, DEFAULT)",
	"(5, '00000000-0000-0000-0000-000000000000', '10.0.0.1', '::1', NULL, DEFAULT)",
	"(6, 'ffffffff-ffff-ffff-ffff-ffffffffffff', NULL, '::1.2.3.4', NULL, DEFAULT)",
	"(7, NULL, NULL, '1:0:0:2::3', NULL, DEFAULT)",
	"(8, UUID(), '192.168.255.0', '1:0:2:3:4:5:6:7', NULL, UUID())",
	"(9, NULL, NULL, NULL, NULL, DEFAULT)",
	"(10, '00000000-0000-1000-8000-000000000000', '0.0.0.1', '::ffff:0.0.0.0', X'0000000000000000000000000000FF00', DEFAULT)",
}

// TestMariaDBUUIDAndInet: MariaDB's UUID, INET4 and INET6 columns replicate
// equal through the initial snapshot and the binlog (inserts, updates,
// deletes, a UUID key): ClickHouse's text of each value is MariaDB's, the
// types are UUID and, on a server without IPv4/IPv6 (18.16), String of the
// text, and verify finds the sides equal.
func TestMariaDBUUIDAndInet(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	cols := []string{"id", "u", "i4", "i6", "nu"} // b as hex, below: CAST AS CHAR spoils bytes
	keyCols := []string{"u", "i6", "v"}
	h.exec(strings.ReplaceAll(fixedBinTable, "%s", a), strings.ReplaceAll(fixedBinKeyTable, "%s", a),
		"INSERT INTO "+a+".fb VALUES "+strings.Join(fixedBinRows[:5], ", "),
		"INSERT INTO "+a+".fbk VALUES ('6ccd780c-baba-1026-9564-5b8c656024db', '::1', 1), ('01890a5d-ac96-774b-bcce-b302099a8057', '::ffff:1.2.3.4', 2), (UUID(), '::', 3)")
	// No checkpoint: these rows come through the snapshot.
	if err := os.Remove(filepath.Join(h.cfg.StateDir, state.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	run := h.start()
	h.waitCaughtUp(run, 60*time.Second)
	h.assertEqual(a, "fb", cols)
	h.assertEqual(a, "fbk", keyCols)
	h.exec("INSERT INTO "+a+".fb VALUES "+strings.Join(fixedBinRows[5:], ", "),
		"UPDATE "+a+".fb SET u = '7d444840-9dc0-11d1-b245-5ffdce74fad2', i4 = '8.8.4.4', i6 = 'fe80::1' WHERE id = 1",
		"UPDATE "+a+".fb SET u = NULL, i6 = '::ffff:255.255.255.255' WHERE id = 3",
		"DELETE FROM "+a+".fb WHERE id = 2",
		"INSERT INTO "+a+".fbk VALUES (UUID(), '2001:db8::1', 4), ('00000000-0000-0000-0000-000000000001', '::2', 5)",
		"UPDATE "+a+".fbk SET v = 10, i6 = '::3' WHERE u = '6ccd780c-baba-1026-9564-5b8c656024db'",
		"UPDATE "+a+".fbk SET u = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' WHERE u = '01890a5d-ac96-774b-bcce-b302099a8057'",
		"DELETE FROM "+a+".fbk WHERE v = 3")
	h.waitCaughtUp(run, 30*time.Second)
	h.assertEqual(a, "fb", cols)
	h.assertEqual(a, "fbk", keyCols)
	// The types as the mapping chose them for this server.
	caps, err := schema.DetectCapabilities(context.Background(), h.ch)
	if err != nil {
		t.Fatal(err)
	}
	ipv4, ipv6 := "String", "String"
	if caps.IPv4 {
		ipv4 = "IPv4"
	}
	if caps.IPv6 {
		ipv6 = "IPv6"
	}
	for col, want := range map[string]string{"u": "Nullable(UUID)", "i4": "Nullable(" + ipv4 + ")", "i6": "Nullable(" + ipv6 + ")",
		"b": "Nullable(FixedString(16))", "nu": "UUID"} {
		var got string
		if err := h.ch.QueryRow(context.Background(), "SELECT type FROM system.columns WHERE database = ? AND table = 'fb' AND name = ?", a, col).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("column %s: ClickHouse type %s, want %s", col, got, want)
		}
	}
	// BINARY(16) stays bytes beside them.
	var b string
	if err := h.ch.QueryRow(context.Background(), "SELECT hex(b) FROM "+a+".fb FINAL WHERE id = 10").Scan(&b); err != nil {
		t.Fatal(err)
	}
	if b != "0000000000000000000000000000FF00" {
		t.Errorf("BINARY(16) of row 10: ClickHouse holds %s", b)
	}
	h.verifyEqual("fb", "fbk")
}

// TestAlterBinaryToUUID: MariaDB's UUID, INET4 and INET6 in DDL read from
// the binlog (which TiDB's parser knows only as BINARY, rewritten): a
// table created with them after the start, and a UUID column added with a
// default, replicate them. An ALTER TABLE ... MODIFY of a BINARY(16)
// column to UUID changes nothing the binlog's table map shows: the writer
// reads the table's definition again at the ALTER, and since ClickHouse
// cannot convert the bytes it holds, the daemon stops naming the table,
// the column and the way out (before, it went on writing bytes where
// MySQL shows text); the way out makes both sides equal.
func TestAlterBinaryToUUID(t *testing.T) {
	h := newHarness(t, 1, "")
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".n (id INT PRIMARY KEY, u UUID NOT NULL, ip6 INET6, ip4 INET4)",
		"INSERT INTO "+a+".n VALUES (1, '123e4567-e89b-12d3-a456-426655440000', '::ffff:10.0.0.1', '10.0.0.1')",
		"ALTER TABLE "+a+".n ADD COLUMN u2 UUID DEFAULT '00000000-0000-0000-0000-000000000001' AFTER u",
		"INSERT INTO "+a+".n (id, u) VALUES (2, '6ba7b810-9dad-11d1-80b4-00c04fd430c8')",
		"CREATE TABLE "+a+".t (id INT PRIMARY KEY, u BINARY(16))",
		"INSERT INTO "+a+".t VALUES (1, UNHEX('0123456789ABCDEF0123456789ABCDEF'))")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("n", "t")

	h.exec("ALTER TABLE "+a+".t MODIFY u UUID",
		"INSERT INTO "+a+".t VALUES (2, '123e4567-e89b-12d3-a456-426655440000')")
	err := run.stopped(t, 30*time.Second, "the daemon went on past a BINARY(16) made UUID")
	wantError(t, err, a+".t", "column u", "ClickHouse cannot change", "fullsync -recreate -tables "+a+".t")
	t.Logf("error: %v", err)
	r := h.newReplicator(io.Discard)
	_, err = r.FullSync(context.Background(), FullSyncOptions{Recreate: true, Tables: []schema.TableName{{Database: a, Table: "t"}}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	run = h.start()
	h.exec("INSERT INTO " + a + ".t VALUES (3, '6ba7b810-9dad-11d1-80b4-00c04fd430c8')")
	h.waitCaughtUp(run, 30*time.Second)
	h.verifyEqual("n", "t")
}
