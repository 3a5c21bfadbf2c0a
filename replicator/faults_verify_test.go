package replicator_test

import (
	"context"
	"strings"

	"github.com/binlog2ch/binlog2ch/config"
	"github.com/binlog2ch/binlog2ch/replicator"
	"github.com/binlog2ch/binlog2ch/verify"
)

// The verify package imports replicator, so the fault tests (package
// replicator, for the harness) reach verify.Run through this hook, set by
// the external test package compiled into the same test binary.
func init() {
	replicator.VerifyForTest = func(ctx context.Context, cfg *config.Config, patterns []string) (replicator.VerifyResult, error) {
		// No retries: the tests verify once the daemon has caught up and
		// the writes have stopped, so a difference is a real one.
		rep, err := verify.Run(ctx, cfg, verify.Options{Chunk: 20000, Retries: -1, Patterns: patterns})
		if err != nil {
			return replicator.VerifyResult{}, err
		}
		var b strings.Builder
		if err := rep.WriteText(&b); err != nil {
			return replicator.VerifyResult{}, err
		}
		res := replicator.VerifyResult{OK: rep.OK, Text: b.String()}
		for _, t := range rep.Tables {
			res.Tables = append(res.Tables, t.Table)
		}
		return res, nil
	}
}
