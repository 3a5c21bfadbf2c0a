//go:build race

package replicator

// raceEnabled: the race detector multiplies memory use, so memory bounds
// are not asserted under it.
const raceEnabled = true
