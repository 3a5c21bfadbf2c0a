package retention_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	_ "github.com/go-sql-driver/mysql"

	"github.com/binlog2ch/binlog2ch/binlog"
	"github.com/binlog2ch/binlog2ch/deploy/localserver"
	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/metrics"
	"github.com/binlog2ch/binlog2ch/retention"
)

// TestHeadroomAsTheServerPurges sets binlog_expire_logs_seconds on a
// private MariaDB, computes by hand from the file's st_mtime when the
// server's purge (MYSQL_BIN_LOG::purge_logs_before_date: st_mtime <
// now - expire, at a rotation) deletes the checkpoint's file, compares
// the watcher's headroom with it, and checks the server against both:
// with headroom left a rotation keeps the file, once it is due a
// rotation deletes it.
func TestHeadroomAsTheServerPurges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	my, db := privateMariaDB(ctx, t)
	exec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	w := &retention.Watcher{DB: db, Binlog: binlog.Config{Addr: my.Addr(), User: my.User, Password: my.Password,
		StallTimeout: 30 * time.Second, Flavor: mysql.MariaDBFlavor, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	check := func(file string) (retention.Estimate, float64, time.Time) {
		t.Helper()
		now := time.Now()
		est, _, err := w.Check(ctx, file, now)
		if err != nil {
			t.Fatal(err)
		}
		// As the gauge reads it.
		var at float64
		switch {
		case est.Gone:
			at = math.Inf(-1)
		case est.Unlimited:
			at = math.Inf(1)
		default:
			at = float64(est.At.UnixNano()) / 1e9
		}
		return est, metrics.RetentionHeadroom(math.Float64bits(at), now), now
	}
	listed := func(file string) bool {
		t.Helper()
		files, err := retention.ListFiles(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Name == file {
				return true
			}
		}
		return false
	}

	files, err := retention.ListFiles(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	first := files[0].Name // opened by the server's start
	exec("SET GLOBAL binlog_expire_logs_seconds = 0")
	if est, h, _ := check(first); !est.Unlimited || !math.IsInf(h, 1) {
		t.Fatalf("no expiry: %+v, headroom %v; want unlimited, +Inf", est, h)
	}
	// The checkpoint's file, closed by a rotation: its successor's
	// description event is the close's time.
	exec("FLUSH BINARY LOGS")
	files, _ = retention.ListFiles(ctx, db)
	cpFile := files[len(files)-1].Name
	exec("CREATE DATABASE retention_test")
	exec("CREATE TABLE retention_test.t (id INT PRIMARY KEY)")
	exec("INSERT INTO retention_test.t VALUES (1)")
	// Open for three seconds: its close is not its start (which the
	// server does not purge by).
	opened := time.Now().Unix()
	for time.Now().Unix() < opened+3 {
		time.Sleep(50 * time.Millisecond)
	}
	exec("INSERT INTO retention_test.t VALUES (3)")
	exec("FLUSH BINARY LOGS")
	exec("INSERT INTO retention_test.t VALUES (2)")
	exec("FLUSH BINARY LOGS")
	st, err := os.Stat(filepath.Join(my.Dir, cpFile))
	if err != nil {
		t.Fatal(err)
	}
	mtime := st.ModTime().Unix() // st_mtime, as the server reads it

	// The server deletes the file at the first check whose now (whole
	// seconds) - expire > mtime: from mtime + expire + 1 on.
	const expire = 3600
	exec("SET GLOBAL binlog_expire_logs_seconds = 3600")
	est, h, now := check(cpFile)
	hand := float64(mtime+expire+1) - float64(now.UnixNano())/1e9
	t.Logf("file %s: st_mtime %d, estimate %+v, headroom %.3f, by hand %.3f", cpFile, mtime, est, h, hand)
	if est.Unlimited || est.Gone || est.Active || est.By != retention.ByAge || est.Setting != "binlog_expire_logs_seconds" {
		t.Fatalf("estimate %+v: want the age limit of binlog_expire_logs_seconds on a closed file", est)
	}
	// Never later than the server; earlier by at most the second the
	// description event's timestamp truncates and the second of the
	// server's comparison.
	if h > hand || h < hand-2 {
		t.Fatalf("headroom %.3f s, by hand from st_mtime %.3f s: want within [hand-2, hand]", h, hand)
	}
	// The active file: its age counts from its close, not yet.
	files, _ = retention.ListFiles(ctx, db)
	if est, h, _ := check(files[len(files)-1].Name); est.Active != true || h != expire {
		t.Fatalf("active file: %+v, headroom %v; want active, %d", est, h, expire)
	}
	// The file before it was opened by the server's start... and closed
	// by a rotation, so its successor's start is its close as well.
	if _, h, _ := check(first); h > float64(mtime+expire+1)-float64(time.Now().UnixNano())/1e9 {
		t.Fatalf("the first file's headroom %.3f is past the checkpoint file's", h)
	}

	// With headroom left, the server keeps the file at a rotation.
	exec("FLUSH BINARY LOGS")
	if !listed(cpFile) {
		t.Fatalf("%s purged with %.0f s of headroom", cpFile, h)
	}
	// Aged past the expiry (the expiry set below the file's age, the
	// second after its mtime passed), the headroom is gone and a
	// rotation purges it.
	for time.Now().Unix() < mtime+2 {
		time.Sleep(50 * time.Millisecond)
	}
	age := time.Now().Unix() - mtime
	exec("SET GLOBAL binlog_expire_logs_seconds = " + strconv.FormatInt(age-1, 10))
	est, h, now = check(cpFile)
	hand = float64(mtime+(age-1)+1) - float64(now.UnixNano())/1e9
	if h > 0 || h > hand {
		t.Fatalf("expiry %d s below the file's age %d s: headroom %.3f (by hand %.3f), want <= 0", age-1, age, h, hand)
	}
	deadline := time.Now().Add(30 * time.Second)
	for listed(cpFile) {
		// MariaDB keeps a file whose transactions' binlog checkpoint is
		// not written yet; a later rotation deletes it.
		if time.Now().After(deadline) {
			t.Fatalf("%s still listed after rotations with headroom %.3f", cpFile, h)
		}
		exec("FLUSH BINARY LOGS")
	}
	if est, h, _ := check(cpFile); !est.Gone || !math.IsInf(h, -1) {
		t.Fatalf("purged file: %+v, headroom %v; want gone, -Inf", est, h)
	}
}

// TestFileOpenedAtServerStart: MariaDB marks the description event of a
// file opened at its start (created set), not one opened by a rotation,
// and the file before a start then counts from its own start: its close,
// at a crash here, is not in the binlog.
func TestFileOpenedAtServerStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	my, db := privateMariaDB(ctx, t)
	if _, err := db.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	files, err := retention.ListFiles(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rotated := files[len(files)-1].Name
	// A second passes inside it, so its start and its end differ.
	opened := time.Now().Unix()
	for time.Now().Unix() < opened+2 {
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE retention_start"); err != nil {
		t.Fatal(err)
	}
	if err := my.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := my.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0) // the pool's connections died with the server
	if _, err := db.ExecContext(ctx, "SET GLOBAL binlog_expire_logs_seconds = 3600"); err != nil {
		t.Fatal(err)
	}
	files, err = retention.ListFiles(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	started := files[len(files)-1].Name
	if started == rotated {
		t.Fatalf("no new binlog file after the restart: %v", files)
	}
	cfg := binlog.Config{Addr: my.Addr(), User: my.User, Password: my.Password, StallTimeout: 30 * time.Second, Flavor: mysql.MariaDBFlavor}
	for file, atStart := range map[string]bool{rotated: false, started: true} {
		st, err := binlog.ReadFileStart(ctx, cfg, file)
		if err != nil {
			t.Fatal(err)
		}
		if st.AtServerStart != atStart {
			t.Errorf("%s: AtServerStart %v, want %v", file, st.AtServerStart, atStart)
		}
	}
	own, err := binlog.ReadFileStart(ctx, cfg, rotated)
	if err != nil {
		t.Fatal(err)
	}
	w := &retention.Watcher{DB: db, Binlog: cfg}
	now := time.Now()
	est, _, err := w.Check(ctx, rotated, now)
	if err != nil {
		t.Fatal(err)
	}
	if !est.At.Equal(own.At.Add(3600 * time.Second)) {
		t.Fatalf("the file before a start: purged at %v, want its own start %v + 1h", est.At, own.At)
	}
	info, err := os.Stat(filepath.Join(my.Dir, rotated))
	if err != nil {
		t.Fatal(err)
	}
	if !est.At.Before(info.ModTime().Add(3600 * time.Second)) {
		t.Fatalf("estimate %v is not before the server's st_mtime + 1h %v", est.At, info.ModTime().Add(3600*time.Second))
	}
}

// privateMariaDB starts a MariaDB of the test's own (its binlog settings
// are changed, its files purged) and opens it; skipped under -short.
func privateMariaDB(ctx context.Context, t *testing.T) (*localserver.Server, *sql.DB) {
	t.Helper()
	if testing.Short() || os.Getenv(servertest.EnvSkip) == "1" {
		t.Skipf("integration test skipped on request (-short or %s=1)", servertest.EnvSkip)
	}
	my, err := localserver.StartMariaDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = my.Stop() })
	db, err := sql.Open("mysql", my.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return my, db
}
