package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(context.Background(), &env{stdout: &out, stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

// TestEveryCommandHasHelp: `binlog2ch <command> -h` prints the command's
// usage once, on stdout, and a bad flag prints the error and the usage
// once, on stderr (the flag package prints the usage itself: printing it
// again showed it twice).
func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands() {
		usage := "Usage: binlog2ch " + c.name
		for _, help := range []string{"-h", "-help", "--help"} {
			code, out, errOut := runCLI(t, c.name, help)
			if code != exitOK || strings.Count(out, usage) != 1 || errOut != "" {
				t.Errorf("%s %s: exit %d, usage %d times on stdout, stderr %q; stdout:\n%s", c.name, help, code, strings.Count(out, usage), errOut, out)
			}
		}
		code, out, errOut := runCLI(t, c.name, "-no-such-flag")
		if code != exitUsage || out != "" || strings.Count(errOut, usage) != 1 || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") {
			t.Errorf("%s -no-such-flag: exit %d, usage %d times on stderr, stdout %q; stderr:\n%s", c.name, code, strings.Count(errOut, usage), out, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "-h"); code != exitOK || strings.Count(out, "Usage: binlog2ch <command>") != 1 || errOut != "" {
		t.Errorf("-h: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}

func TestUsage(t *testing.T) {
	if code, _, errOut := runCLI(t); code != exitUsage || !strings.Contains(errOut, "Commands:") {
		t.Errorf("no args: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "frobnicate"); code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "run", "-nosuchflag"); code != exitUsage || !strings.Contains(errOut, "nosuchflag") {
		t.Errorf("bad flag: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "run", "extra"); code != exitUsage || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("stray argument: exit %d, %q", code, errOut)
	}
	if code, out, _ := runCLI(t, "version"); code != exitOK || !strings.HasPrefix(out, "binlog2ch ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

func TestConfigCommandsRejectBadConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "binlog2ch.yaml")
	if err := os.WriteFile(bad, []byte("mysql:\n  server_id: 0\n  password: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "fullsync", "verify", "schema", "status"} {
		code, _, errOut := runCLI(t, cmd, "-config", bad)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d", cmd, code, exitUsage)
		}
		if !strings.Contains(errOut, "config: mysql.server_id: must be > 0 ("+bad+":2)") {
			t.Errorf("%s: stderr does not name the key and file:\n%s", cmd, errOut)
		}
		if strings.Contains(errOut, "hunter2") {
			t.Errorf("%s: stderr leaks the password", cmd)
		}
		if code, _, errOut := runCLI(t, cmd); code != exitUsage || !strings.Contains(errOut, "-config FILE is required") {
			t.Errorf("%s without -config: exit %d, %q", cmd, code, errOut)
		}
	}
}

// TestInsecureTLSIsLoggedAtStart: every command that loads the config says
// loudly that certificate verification is off.
func TestInsecureTLSIsLoggedAtStart(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "binlog2ch.yaml")
	if err := os.WriteFile(conf, []byte(`mysql: {addr: "127.0.0.1:1", user: repl, server_id: 1, tls: {enabled: true, insecure_skip_verify: true}}
clickhouse: {addr: ["127.0.0.1:1"]}
tables: {include: ["shop.*"]}
state_dir: state
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// clickhouse18 needs no ClickHouse; MySQL's port is closed, so the
	// command fails at once, after the warning.
	code, _, errOut := runCLI(t, "schema", "-config", conf, "-profile", "clickhouse18", "-log-format", "text")
	if code == exitOK {
		t.Fatal("schema succeeded against a closed port")
	}
	if !strings.Contains(errOut, "level=WARN") || !strings.Contains(errOut, "UNSAFE: TLS certificate verification is OFF") ||
		!strings.Contains(errOut, "key=mysql.tls.insecure_skip_verify") {
		t.Fatalf("no warning about insecure_skip_verify in:\n%s", errOut)
	}
}

func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	l, err := newLogger(&b, "debug", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hello")
	if !strings.HasPrefix(b.String(), "{") {
		t.Errorf("json format wrote %q", b.String())
	}
	// An error with a stack (as pingcap/errors prints with %+v) is logged
	// as its message, on one line.
	b.Reset()
	l, err = newLogger(&b, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	l.Warn("failed", "error", stackError{})
	if got := b.String(); !strings.Contains(got, "error=\"connection was bad\"") || strings.Contains(got, "STACK") || strings.Count(got, "\n") != 1 {
		t.Errorf("text format wrote %q", got)
	}
	if _, err := newLogger(&b, "loud", "json"); err == nil {
		t.Error("bad level accepted")
	}
	if _, err := newLogger(&b, "info", "xml"); err == nil {
		t.Error("bad format accepted")
	}
}

// stackError prints a stack with %+v, as pingcap/errors' errors do.
type stackError struct{}

func (stackError) Error() string { return "connection was bad" }

func (e stackError) Format(f fmt.State, verb rune) {
	if f.Flag('+') {
		fmt.Fprint(f, "connection was bad\nSTACK\n\tframe")
		return
	}
	fmt.Fprint(f, e.Error())
}

// TestDemo runs `binlog2ch demo` end to end against throwaway servers, as
// `make demo` does.
func TestDemo(t *testing.T) {
	if testing.Short() || os.Getenv("BINLOG2CH_SKIP_INTEGRATION") == "1" {
		t.Skip("integration test skipped on request")
	}
	code, out, errOut := runCLI(t, "demo", "-rows", "300")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"MySQL holds 300 rows", "ClickHouse holds 300 rows", "testdecimal=", "Stopping the servers."} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
