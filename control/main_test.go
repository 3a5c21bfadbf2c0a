package control

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envControlClient); dir != "" {
		os.Exit(controlClientMain(dir))
	}
	os.Exit(m.Run())
}
