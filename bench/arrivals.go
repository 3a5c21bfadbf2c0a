package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// When a row arrives in ClickHouse. ClickHouse 18.16 has no insert-time
// column (and no sub-second clock for a DEFAULT), so the arrival has to be
// observed, and observing through queries costs ClickHouse the CPU the
// scenario measures: one poll of system.parts costs it ~2.5 ms here, so
// polling 500 tables every 100 ms would cost more than the companion run's
// whole load. Where this machine can read the tables' directories (a
// private or local server), the parts are watched there instead, with
// inotify: ClickHouse writes an insert's part as tmp_insert_<name> and
// renames it to <name> as it adds it to the table (under the same lock),
// so the rename is the moment its rows become visible, and the part's
// count.txt holds their number. That times every row of every table to
// about a millisecond and asks ClickHouse nothing. Elsewhere a sampler
// polls a few tables through system.parts.

// partArrivals observes a run's inserts arriving in ClickHouse.
type partArrivals interface {
	// source says how, for the report.
	source() string
	// awaitAll waits until every table has want[table] rows more than
	// when the observation started (total more over all the tables, for
	// an observer that only sees some tables), and returns when that
	// happened.
	awaitAll(ctx context.Context, want map[string]uint64, total uint64, alive func() error) (time.Time, error)
	// arrivals are what was observed.
	arrivals() []arrival
	stop()
}

// awaitLimit bounds the wait for the last rows after the load stops.
const awaitLimit = 10 * time.Minute

// watchParts observes the tables' directories, or samples system.parts
// when they cannot be read here.
func (r *run) watchParts(ctx context.Context, match string, names []string) (partArrivals, error) {
	w, err := r.newPartWatcher(ctx, match, len(names))
	if err == nil {
		return w, nil
	}
	fmt.Fprintf(r.log, "cannot watch ClickHouse's table directories (%v); sampling system.parts of %d tables instead\n", err, min(len(names), tablesSampled))
	return r.newPartSampler(ctx, match, names)
}

// partWatcher watches the tables' directories with inotify.
type partWatcher struct {
	f      *os.File
	tables map[int32]string  // watch descriptor -> table
	dirs   map[string]string // table -> its directory
	done   chan struct{}
	once   sync.Once

	mu  sync.Mutex
	got []arrival
	err error
}

func (r *run) newPartWatcher(ctx context.Context, match string, n int) (*partWatcher, error) {
	// data_path is 18.16's column; servers with Atomic databases have
	// data_paths instead, and then the query fails and the sampler serves.
	rows, err := r.ch.Query(ctx, "SELECT name, data_path FROM system.tables WHERE database = ? AND match(name, ?)", r.db, match)
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	for rows.Next() {
		var name, dir string
		if err := rows.Scan(&name, &dir); err != nil {
			rows.Close()
			return nil, err
		}
		dirs[name] = dir
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(dirs) != n {
		return nil, fmt.Errorf("ClickHouse lists %d of the %d tables", len(dirs), n)
	}
	// Each table holds its warm-up row's part: readable here means the
	// directories are this server's and count.txt is there to read.
	for _, dir := range dirs {
		if err := hasReadablePart(dir); err != nil {
			return nil, err
		}
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &partWatcher{tables: map[int32]string{}, dirs: dirs, done: make(chan struct{})}
	for table, dir := range dirs {
		wd, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVED_TO|syscall.IN_ONLYDIR)
		if err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
		}
		w.tables[int32(wd)] = table
	}
	// A non-blocking descriptor makes the File pollable, so Close ends a
	// Read in progress.
	w.f = os.NewFile(uintptr(fd), "inotify")
	go w.read()
	return w, nil
}

func hasReadablePart(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && insertPart.MatchString(e.Name()) {
			_, err := partRows(filepath.Join(dir, e.Name()))
			return err
		}
	}
	return fmt.Errorf("%s holds no part", dir)
}

// partRows reads a part's row count.
func partRows(dir string) (uint64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "count.txt"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
}

func (w *partWatcher) source() string {
	return "inotify on the tables' directories: each insert's part renamed into place (visible), rows from its count.txt; every row of every table, ~1 ms resolution, no queries to ClickHouse"
}

func (w *partWatcher) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.fail(err)
			}
			return
		}
		now := time.Now()
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+size]), "\x00")
			off += syscall.SizeofInotifyEvent + size
			if mask&syscall.IN_Q_OVERFLOW != 0 {
				w.fail(errors.New("the inotify queue overflowed: arrivals were lost"))
				continue
			}
			table, ok := w.tables[wd]
			if !ok || !insertPart.MatchString(name) {
				continue // merges' parts (level > 0) and anything else
			}
			rows, err := partRows(filepath.Join(w.dirs[table], name))
			if err != nil {
				w.fail(fmt.Errorf("part %s of %s: %w", name, table, err))
				continue
			}
			w.mu.Lock()
			w.got = append(w.got, arrival{table, now, rows})
			w.mu.Unlock()
		}
	}
}

func (w *partWatcher) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *partWatcher) awaitAll(ctx context.Context, want map[string]uint64, _ uint64, alive func() error) (time.Time, error) {
	for deadline := time.Now().Add(awaitLimit); ; time.Sleep(20 * time.Millisecond) {
		w.mu.Lock()
		got, err := w.got, w.err
		w.mu.Unlock()
		if err != nil {
			return time.Time{}, err
		}
		// When each table got its last row: the latest of those is when
		// ClickHouse held them all.
		have := map[string]uint64{}
		var last time.Time
		complete := 0
		for _, a := range got {
			if have[a.table] >= want[a.table] {
				continue
			}
			if have[a.table] += a.rows; have[a.table] >= want[a.table] {
				complete++
				if a.at.After(last) {
					last = a.at
				}
			}
		}
		missing := 0
		for t, n := range want {
			if n > 0 && have[t] < n {
				missing++
			}
		}
		if missing == 0 && complete > 0 {
			return last, nil
		}
		if err := alive(); err != nil {
			return time.Time{}, err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("%d tables still miss rows %s after the load stopped", missing, awaitLimit)
		}
	}
}

func (w *partWatcher) arrivals() []arrival {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]arrival(nil), w.got...)
}

func (w *partWatcher) stop() {
	w.once.Do(func() {
		w.f.Close()
		<-w.done
	})
}

// partSampler polls system.parts for a few tables, spread over the run's.
type partSampler struct {
	r       *run
	match   string // all the run's tables
	tables  []string
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once

	mu    sync.Mutex
	last  map[string]uint64
	got   []arrival
	polls int // polls recorded
}

func (r *run) newPartSampler(ctx context.Context, match string, names []string) (*partSampler, error) {
	s := &partSampler{r: r, match: match, done: make(chan struct{}), stopped: make(chan struct{})}
	k := min(len(names), tablesSampled)
	for i := range k {
		s.tables = append(s.tables, names[i*len(names)/k])
	}
	var err error
	if s.last, err = s.poll(ctx); err != nil {
		return nil, err
	}
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(tablesSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			counts, err := s.poll(ctx)
			if err != nil {
				continue // a missed poll only coarsens the resolution
			}
			now := time.Now()
			s.mu.Lock()
			for t, n := range counts {
				if n > s.last[t] {
					s.got = append(s.got, arrival{t, now, n - s.last[t]})
					s.last[t] = n
				}
			}
			s.polls++
			s.mu.Unlock()
		}
	}()
	return s, nil
}

func (s *partSampler) poll(ctx context.Context) (map[string]uint64, error) {
	rows, err := s.r.ch.Query(ctx, "SELECT table, sum(rows) FROM system.parts WHERE database = ? AND active AND has(?, table) GROUP BY table", s.r.db, s.tables)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]uint64{}
	for rows.Next() {
		var t string
		var n uint64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		counts[t] = n
	}
	return counts, rows.Err()
}

func (s *partSampler) source() string {
	return fmt.Sprintf("system.parts sum(rows) of up to %d tables spread over the run's, every %s (one query a poll, its CPU included in ClickHouse's)", tablesSampled, tablesSampleEvery)
}

func (s *partSampler) awaitAll(ctx context.Context, _ map[string]uint64, total uint64, alive func() error) (time.Time, error) {
	if err := s.r.awaitRows(ctx, s.match, total, awaitLimit); err != nil {
		return time.Time{}, err
	}
	end := time.Now()
	// Every row is in: once a poll that started after this one is
	// recorded, the sampled tables' last rows are among the arrivals.
	s.mu.Lock()
	p := s.polls
	s.mu.Unlock()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		done := s.polls >= p+2
		s.mu.Unlock()
		if done {
			return end, alive()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, errors.New("the arrival sampler stopped polling")
		}
	}
}

func (s *partSampler) arrivals() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.got...)
}

func (s *partSampler) stop() {
	s.once.Do(func() { close(s.done) })
	<-s.stopped
}
