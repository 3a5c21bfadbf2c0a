package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockDir: a second open of the lock conflicts (also within one
// process: flock locks belong to the open file) and names the holder's pid
// and command; once released, the lock can be taken again.
func TestLockDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state") // created by LockDir
	first, err := LockDir(dir, "run")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state_dir: %v, %v; want mode 0700", fi.Mode(), err)
	}
	_, err = LockDir(dir, "fullsync")
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("second lock: %v, want a HeldError", err)
	}
	if held.PID != os.Getpid() || held.Command != "run" || held.Dir != dir {
		t.Errorf("held by %+v, want pid %d, run, %s", held, os.Getpid(), dir)
	}
	if want := fmt.Sprintf("state_dir %s is held by binlog2ch run (pid %d)", dir, os.Getpid()); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	first.Release()
	first.Release() // harmless twice
	if data, _ := os.ReadFile(filepath.Join(dir, LockFile)); len(data) != 0 {
		t.Errorf("released lock file still holds %q", data)
	}
	second, err := LockDir(dir, "resync")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	defer second.Release()
	if data, _ := os.ReadFile(filepath.Join(dir, LockFile)); strings.TrimSpace(string(data)) != fmt.Sprintf("%d resync", os.Getpid()) {
		t.Errorf("lock file holds %q", data)
	}
}

// TestLockDirUnknownPID: a holder that has not written its pid yet is
// named without one.
func TestLockDirUnknownPID(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(dir, "run")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := os.Truncate(filepath.Join(dir, LockFile), 0); err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(dir, "run")
	if err == nil || !strings.Contains(err.Error(), "binlog2ch (pid unknown)") {
		t.Errorf("got %v", err)
	}
}
