//go:build !race

package replicator

// raceEnabled: see race_on_test.go.
const raceEnabled = false
