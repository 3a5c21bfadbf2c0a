package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var units = []string{"binlog2ch.service", "binlog2ch-fullsync.service"}

// installedBinary is where the units expect binlog2ch (docs/operations.md
// "Run under systemd").
const installedBinary = "/usr/local/bin/binlog2ch"

// daemonFlushBound is how long `binlog2ch run` may spend flushing after
// SIGTERM (replicator's shutdownTimeout); TimeoutStopSec must exceed it or
// systemd SIGKILLs a daemon that is saving its checkpoint.
const daemonFlushBound = 30 * time.Second

// TestSystemdVerify runs systemd-analyze verify on the units. verify
// refuses an ExecStart binary that does not exist, and binlog2ch is not
// installed where the tests run, so the units are checked in a temporary
// copy whose ExecStart points at a stand-in executable; nothing else is
// changed. verify does not check that User= exists. It exits 0 even for
// unknown keys (it only warns), so any line it prints about the units fails
// the test.
func TestSystemdVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (package systemd): the units are not verified here; TestUnitSettings still checks their settings")
	}
	dir := t.TempDir()
	stand := filepath.Join(dir, "binlog2ch")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, u := range units {
		data, err := os.ReadFile(filepath.Join("systemd", u))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if !strings.Contains(text, "ExecStart="+installedBinary+" ") {
			t.Fatalf("%s: ExecStart does not run %s", u, installedBinary)
		}
		p := filepath.Join(dir, u)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, installedBinary, stand)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze verify: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		// Lines about other units of the host are not ours to fix.
		if strings.Contains(line, dir) || strings.Contains(line, "binlog2ch") {
			t.Errorf("systemd-analyze verify: %s", line)
		} else {
			t.Logf("systemd-analyze verify (not about these units): %s", line)
		}
	}
}

// unitSettings reads a unit file into section.key -> values (a key may
// repeat, as EnvironmentFile= does).
func unitSettings(t *testing.T, name string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settings := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not key=value: %q", name, line)
			}
			settings[section+"."+k] = append(settings[section+"."+k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return settings
}

// TestUnitSettings pins what the daemon relies on and the hardening, so
// an edit that drops one fails here (systemd-analyze accepts a unit
// without them).
func TestUnitSettings(t *testing.T) {
	common := map[string]string{
		"Service.User":                    "binlog2ch",
		"Service.StateDirectory":          "binlog2ch",
		"Service.ConfigurationDirectory":  "binlog2ch",
		"Service.NoNewPrivileges":         "yes",
		"Service.ProtectSystem":           "strict",
		"Service.ProtectHome":             "yes",
		"Service.PrivateTmp":              "yes",
		"Service.PrivateDevices":          "yes",
		"Service.ProtectKernelTunables":   "yes",
		"Service.ProtectKernelModules":    "yes",
		"Service.ProtectKernelLogs":       "yes",
		"Service.ProtectControlGroups":    "yes",
		"Service.RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"Service.RestrictNamespaces":      "yes",
		"Service.LockPersonality":         "yes",
		"Service.MemoryDenyWriteExecute":  "yes",
		"Service.SystemCallArchitectures": "native",
		"Service.CapabilityBoundingSet":   "",
	}
	specific := map[string]map[string]string{
		"binlog2ch.service": {
			"Service.Type":                     "notify",
			"Service.NotifyAccess":             "main",
			"Service.WatchdogSec":              "60",
			"Service.Restart":                  "on-failure",
			"Service.ExecStart":                installedBinary + " run -config /etc/binlog2ch/binlog2ch.yaml",
			"Install.WantedBy":                 "multi-user.target",
			"Service.KillSignal":               "SIGTERM",
			"Service.RestartPreventExitStatus": "2",
		},
		"binlog2ch-fullsync.service": {
			"Service.Type":      "oneshot",
			"Unit.Conflicts":    "binlog2ch.service",
			"Service.ExecStart": installedBinary + " fullsync -config /etc/binlog2ch/binlog2ch.yaml -progress log $FULLSYNC_ARGS",
		},
	}
	for _, u := range units {
		s := unitSettings(t, u)
		for _, want := range []map[string]string{common, specific[u]} {
			for k, v := range want {
				if got, ok := s[k]; !ok || got[len(got)-1] != v {
					t.Errorf("%s: %s = %q, want %q", u, k, got, v)
				}
			}
		}
		envFiles := strings.Join(s["Service.EnvironmentFile"], " ")
		if !strings.Contains(envFiles, "-/etc/binlog2ch/env") {
			t.Errorf("%s: EnvironmentFile = %q, want -/etc/binlog2ch/env among them", u, envFiles)
		}
		stop := s["Service.TimeoutStopSec"]
		if len(stop) == 0 {
			t.Errorf("%s: no TimeoutStopSec", u)
			continue
		}
		secs, err := strconv.Atoi(stop[0])
		if err != nil || time.Duration(secs)*time.Second <= daemonFlushBound {
			t.Errorf("%s: TimeoutStopSec = %q, want whole seconds above the daemon's %s flush bound", u, stop[0], daemonFlushBound)
		}
	}
}
