package main

import (
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
	"github.com/binlog2ch/binlog2ch/loadgen"
)

func TestLoadgenCommand(t *testing.T) {
	if code, _, errOut := runCLI(t, "loadgen", "-count", "10"); code != exitUsage || !strings.Contains(errOut, "-schema is required") {
		t.Fatalf("without -schema: exit %d, %q", code, errOut)
	}
	srv := servertest.Need(t)
	args := []string{"loadgen", "-host", srv.MySQL.Host, "-port", strconv.Itoa(srv.MySQL.Port), "-user", srv.MySQL.User, "-pwd", srv.MySQL.Password,
		"-schema", servertest.Name("b2c_cli_loadgen"), "-count", "2000", "-batchsize", "250", "-conn", "2", "-update-ratio", "0.2"}
	if code, _, errOut := runCLI(t, args...); code != exitError || !strings.Contains(errOut, "run with -create") {
		t.Fatalf("missing table: exit %d, %q", code, errOut)
	}
	code, out, errOut := runCLI(t, append(args, "-create")...)
	if code != exitOK || !strings.Contains(out, "Global Results") || !strings.Contains(out, "inserted:  2000 rows") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestLoadgenFlags: every flag lands in its option, with insertDataTest's
// meaning (-time_interval in milliseconds, -count per table).
func TestLoadgenFlags(t *testing.T) {
	e := &env{stdout: io.Discard, stderr: io.Discard}
	o, _, done := loadgenOptions(e, []string{"-host", "db1", "-port", "3307", "-user", "u", "-pwd", "p", "-schema", "s", "-table", "t_3",
		"-count", "10", "-batchsize", "20", "-conn", "3", "-time_interval", "250", "-create", "-drop", "-tables", "4",
		"-update-ratio", "0.25", "-delete-ratio", "0.05", "-duration", "90s", "-rate", "1500", "-extra-columns", "6", "-max-len", "8", "-full-range", "-seed", "42"})
	want := loadgen.Options{Host: "db1", Port: 3307, User: "u", Password: "p", Schema: "s", Table: "t_3", Count: 10, BatchSize: 20, Conns: 3,
		Interval: 250 * time.Millisecond, Create: true, Drop: true, Tables: 4, UpdateRatio: 0.25, DeleteRatio: 0.05, Duration: 90 * time.Second,
		Rate: 1500, ExtraColumns: 6, MaxLen: 8, FullRange: true, Seed: 42}
	if done || !reflect.DeepEqual(o, want) {
		t.Fatalf("got %+v\nwant %+v", o, want)
	}
	if names := o.TableNames(); strings.Join(names, ",") != "t_1,t_2,t_3,t_4" {
		t.Fatalf("tables %v", names)
	}
	o, _, _ = loadgenOptions(e, []string{"-schema", "s"})
	if o.Host != "127.0.0.1" || o.Port != 3306 || o.Count != 100000 || o.BatchSize != 1000 || o.Conns != 4 || o.Tables != 1 || o.Seed == 0 || o.FullRange {
		t.Fatalf("defaults %+v", o)
	}
	if _, code, done := loadgenOptions(e, []string{"-count", "x"}); !done || code != exitUsage {
		t.Fatalf("bad flag: done %v, code %d", done, code)
	}
}
