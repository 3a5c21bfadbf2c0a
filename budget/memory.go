package budget

import "sync/atomic"

// Memory is the bytes of rows the writers hold in batches, filling and in
// flight, against batch.max_buffer_bytes. Every writer may hold up to
// max_inflight+1 batches of max_bytes; with hundreds of tables busy at
// once that bound alone is gigabytes, so past the limit a writer sends
// its batch at once and waits for it before filling more (the sink's
// Writer.relieveMemory). The limit can be passed by what the writers
// append before they see it, about one rows event each.
type Memory struct {
	limit int64 // 0: none
	used  atomic.Int64
	// Gauge reports the bytes held.
	Gauge func(float64)
}

// NewMemory returns a Memory of limit bytes (0: none).
func NewMemory(limit int64) *Memory {
	return &Memory{limit: limit, Gauge: func(float64) {}}
}

// Add counts n more bytes held (fewer when negative).
func (m *Memory) Add(n int) {
	if n != 0 {
		m.Gauge(float64(m.used.Add(int64(n))))
	}
}

// Over reports whether the writers hold more than the limit.
func (m *Memory) Over() bool { return m.limit > 0 && m.used.Load() > m.limit }
