package schema

// SetBeforeRead sets the Loader's pause point for tests.
func SetBeforeRead(l *Loader, f func(tables int)) { l.beforeRead = f }

// Queued is how many requests wait for the Loader's next read.
func Queued(l *Loader) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}
