// Command binlog2ch replicates MySQL into ClickHouse by reading the binlog.
// Each subcommand parses its flags, loads the config, sets up logging and
// hands the work to the package that does it (replicator, snapshot,
// verify, bench, loadgen, status); it must not replicate, copy or compare
// rows itself.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	_ "time/tzdata" // datetime_zone must resolve on hosts without a zone database

	"github.com/binlog2ch/binlog2ch/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Exit codes: 2 is a usage or configuration error, as for flag parsing.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

// env is what a command may touch: its arguments come separately.
type env struct {
	stdout, stderr io.Writer
}

func commands() []command {
	return []command{
		{"run", "follow the binlog and keep ClickHouse equal to MySQL (the daemon)", runCmd},
		{"fullsync", "copy tables once, then exit", fullsyncCmd},
		{"resync", "copy tables again online: the running daemon does it, or this command when none runs", resyncCmd},
		{"status", "show the running daemon's state, or the checkpoint when none runs", statusCmd},
		{"verify", "compare MySQL and ClickHouse table by table", verifyCmd},
		{"schema", "print the ClickHouse DDL binlog2ch would create", schemaCmd},
		{"loadgen", "fill MySQL tables with generated rows (like Bifrost's insertDataTest)", loadgenCmd},
		{"bench", "measure rows/minute, lag, CPU and memory (catch-up and live)", benchCmd},
		{"demo", "start throwaway servers, replicate a freshly filled binlog_field_test_1, show it", demoCmd},
		{"version", "print the version", versionCmd},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := dispatch(ctx, &env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version":
		return versionCmd(ctx, e, nil)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "binlog2ch: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: binlog2ch <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'binlog2ch <command> -h' for a command's flags.")
}

// newFlagSet returns a flag set that prints its usage to stdout for -h and
// to stderr for a bad flag (see parseFlags).
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: binlog2ch %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; done is true when the command must return code
// (after -h or a bad flag).
func parseFlags(e *env, fs *flag.FlagSet, args []string) (code int, done bool) {
	// The flag package itself prints the usage, for -h as for a bad flag
	// (after the error); collect it to print it once, where it belongs.
	var msg bytes.Buffer
	out := fs.Output()
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = e.stdout.Write(msg.Bytes())
			return exitOK, true
		}
		_, _ = e.stderr.Write(msg.Bytes())
		return exitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "binlog2ch %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, true
	}
	return 0, false
}

// configFlags are the flags every command that reads the config file has.
type configFlags struct {
	config    string
	logLevel  string
	logFormat string
}

func (c *configFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "config file (required); see deploy/binlog2ch.example.yaml")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "auto", "log format: text, json, or auto (text on a terminal, json otherwise)")
}

// load returns the logger and the validated config, or the exit code after
// printing why not.
func (c *configFlags) load(e *env, cmd string) (*slog.Logger, *config.Config, int) {
	logger, err := newLogger(e.stderr, c.logLevel, c.logFormat)
	if err != nil {
		fmt.Fprintf(e.stderr, "binlog2ch %s: %v\n", cmd, err)
		return nil, nil, exitUsage
	}
	if c.config == "" {
		fmt.Fprintf(e.stderr, "binlog2ch %s: -config FILE is required\n", cmd)
		return nil, nil, exitUsage
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return nil, nil, exitUsage
	}
	cfg.LogUnsafeSettings(logger)
	return logger, cfg, exitOK
}

// newLogger builds the slog logger the flags ask for.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: want debug, info, warn or error, got %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: errorMessage}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "auto":
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format: want text, json or auto, got %q", format)
}

// errorMessage logs an error as its message. The text handler would format
// it with %+v, which prints the stack of the errors go-mysql wraps with
// pingcap/errors (every binlog connection failure), over many lines.
func errorMessage(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindAny {
		if err, ok := a.Value.Any().(error); ok {
			return slog.String(a.Key, err.Error())
		}
	}
	return a
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func versionCmd(_ context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "version", "")
	if code, done := parseFlags(e, fs, args); done {
		return code
	}
	fmt.Fprintf(e.stdout, "binlog2ch %s\n", buildVersion())
	return exitOK
}

// buildVersion is the -ldflags version, else the module version, else
// "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		if v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return "devel-" + strings.TrimSpace(s.Value)
			}
		}
	}
	return "devel"
}
