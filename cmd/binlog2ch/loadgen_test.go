package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/deploy/localserver/servertest"
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
