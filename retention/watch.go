package retention

import (
	"context"
	"database/sql"
	"time"

	"github.com/binlog2ch/binlog2ch/binlog"
)

// Watcher estimates, each time it is asked, when the server may purge a
// file: its settings and files read again each time, the files' starts
// read once (a file's first event never changes), the binlog's growth
// measured over its last checks. One goroutine uses it.
type Watcher struct {
	DB     *sql.DB
	Binlog binlog.Config // where a file's start is read (ReadFileStart)
	// ReadStart reads a file's start; nil: binlog.ReadFileStart.
	ReadStart func(ctx context.Context, cfg binlog.Config, file string) (binlog.FileStart, error)

	starts  map[string]binlog.FileStart
	samples []sample
}

// sample is the binlog's end at a check: written counts the bytes written
// since the watcher's first check.
type sample struct {
	at      time.Time
	last    File
	written uint64
}

// rateSamples bounds the checks the growth is measured over.
const rateSamples = 10

// Check estimates when the server may purge file, as of now.
func (w *Watcher) Check(ctx context.Context, file string, now time.Time) (Estimate, Settings, error) {
	s, err := ReadSettings(ctx, w.DB)
	if err != nil {
		return Estimate{}, s, err
	}
	files, err := ListFiles(ctx, w.DB)
	if err != nil {
		return Estimate{}, s, err
	}
	rate := w.measure(files, now)
	i := indexOf(files, file)
	var closed time.Time
	if !s.Unlimited() && i >= 0 && i < len(files)-1 {
		if closed, err = w.closedAt(ctx, files[i].Name, files[i+1].Name); err != nil {
			return Estimate{}, s, err
		}
	}
	w.forget(files)
	return Compute(s, files, file, closed, now, rate), s, nil
}

// closedAt is when file was closed: next's start, or file's own start
// when next was opened by a server start (see the package comment).
func (w *Watcher) closedAt(ctx context.Context, file, next string) (time.Time, error) {
	st, err := w.start(ctx, next)
	if err != nil {
		return time.Time{}, err
	}
	if !st.AtServerStart {
		return st.At, nil
	}
	own, err := w.start(ctx, file)
	if err != nil {
		return time.Time{}, err
	}
	return own.At, nil
}

func (w *Watcher) start(ctx context.Context, file string) (binlog.FileStart, error) {
	if st, ok := w.starts[file]; ok {
		return st, nil
	}
	read := w.ReadStart
	if read == nil {
		read = binlog.ReadFileStart
	}
	st, err := read(ctx, w.Binlog, file)
	if err != nil {
		return st, err
	}
	if w.starts == nil {
		w.starts = map[string]binlog.FileStart{}
	}
	w.starts[file] = st
	return st, nil
}

// forget drops the starts of files the server no longer lists.
func (w *Watcher) forget(files []File) {
	for name := range w.starts {
		if indexOf(files, name) < 0 {
			delete(w.starts, name)
		}
	}
}

// measure records the binlog's end and returns its growth in bytes a
// second over the kept checks (0 at the first, or when the file last seen
// as active is gone: RESET MASTER, a purge past it).
func (w *Watcher) measure(files []File, now time.Time) float64 {
	if len(files) == 0 {
		return 0
	}
	cur := sample{at: now, last: files[len(files)-1]}
	if n := len(w.samples); n > 0 {
		prev := w.samples[n-1]
		i := indexOf(files, prev.last.Name)
		if i < 0 || files[i].Size < prev.last.Size {
			w.samples = w.samples[:0]
		} else {
			grown := files[i].Size - prev.last.Size
			for _, f := range files[i+1:] {
				grown += f.Size
			}
			cur.written = prev.written + grown
		}
	}
	w.samples = append(w.samples, cur)
	if len(w.samples) > rateSamples {
		w.samples = w.samples[1:]
	}
	first := w.samples[0]
	if elapsed := cur.at.Sub(first.at).Seconds(); elapsed > 0 {
		return float64(cur.written-first.written) / elapsed
	}
	return 0
}
