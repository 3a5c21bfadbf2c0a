package sink

import "sync/atomic"

// memory is the bytes of rows the writers hold in batches, filling and in
// flight, against batch.max_buffer_bytes. Every writer may hold up to
// max_inflight+1 batches of max_bytes; with hundreds of tables busy at
// once that bound alone is gigabytes, so past the limit a writer sends
// its batch at once and waits for it before filling more (see
// Writer.relieveMemory). The limit can be passed by what the writers
// append before they see it, about one rows event each.
type memory struct {
	limit int64 // 0: none
	used  atomic.Int64
	// gauge reports the bytes held.
	gauge func(float64)
}

func newMemory(limit int64) *memory {
	return &memory{limit: limit, gauge: func(float64) {}}
}

func (m *memory) add(n int) {
	if n != 0 {
		m.gauge(float64(m.used.Add(int64(n))))
	}
}

// over reports whether the writers hold more than the limit.
func (m *memory) over() bool { return m.limit > 0 && m.used.Load() > m.limit }
