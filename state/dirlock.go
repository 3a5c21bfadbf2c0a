package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file in state_dir whose exclusive flock the process
// writing there holds (`run` for its whole run, `fullsync` and an offline
// `resync` while they copy); it holds the holder's pid and command. The
// kernel drops the lock when the process exits, however it exits, so a
// lock is never stale; the file itself stays.
const LockFile = "lock"

// DirLock is a held state_dir lock.
type DirLock struct {
	f *os.File
}

// HeldError is a state_dir lock another process holds.
type HeldError struct {
	Dir     string
	PID     int    // 0: not known (the holder had not written it yet)
	Command string // the binlog2ch command holding it: run, fullsync, resync
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("state_dir %s is held by %s", e.Dir, e.Holder())
}

// Holder is "binlog2ch run (pid 1234)".
func (e *HeldError) Holder() string {
	name := "binlog2ch"
	if e.Command != "" {
		name += " " + e.Command
	}
	if e.PID == 0 {
		return name + " (pid unknown)"
	}
	return fmt.Sprintf("%s (pid %d)", name, e.PID)
}

// LockDir takes state_dir's lock for command, creating the directory
// (0700) if need be. It never waits: when another process holds it, the
// error is a *HeldError naming that process.
func LockDir(dir, command string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state_dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state_dir lock: %w", err)
	}
	// flock, not fcntl: fcntl's locks belong to the process, so a second
	// open in the same process would not conflict; flock's belong to the
	// open file.
	if err := flock(f); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			held := &HeldError{Dir: dir}
			held.PID, held.Command = parseHolder(f)
			f.Close()
			return nil, held
		}
		f.Close()
		return nil, fmt.Errorf("state_dir lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), command)), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state_dir lock %s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// parseHolder reads the holder's "pid command" line.
func parseHolder(f *os.File) (pid int, command string) {
	buf := make([]byte, 128)
	n, _ := f.ReadAt(buf, 0)
	pidText, command, _ := strings.Cut(strings.TrimSpace(string(buf[:n])), " ")
	pid, _ = strconv.Atoi(pidText)
	return pid, command
}

// Release gives the lock up (exiting does too).
func (l *DirLock) Release() {
	if l == nil || l.f == nil {
		return
	}
	// The pid goes first, so no one reads it after this process let go.
	_ = l.f.Truncate(0)
	l.f.Close()
	l.f = nil
}
