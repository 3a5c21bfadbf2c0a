package router

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/binlog2ch/binlog2ch/block"
	"github.com/binlog2ch/binlog2ch/chtables"
	"github.com/binlog2ch/binlog2ch/schema"
)

// TestTableOwnError: the errors a table may fail alone with, wrapped as
// the writer wraps them, and those that stop the daemon whatever the
// option.
func TestTableOwnError(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("a.t at binlog binlog.000001:4: %w", err) }
	own := []error{
		wrap(&chtables.TargetChangedError{Table: "a.t", MySQL: "a.t", Problem: "lacks column x"}),
		wrap(&block.ConvertError{Table: "a.t", Column: "c", Msg: "out of range"}),
		wrap(&schema.UnsupportedTypeError{Type: "inet6"}),
		wrap(&schema.UnsupportedCharsetError{Charset: "dec8"}),
		wrap(&schema.RenameColumnError{From: "a", To: "b"}),
	}
	for _, err := range own {
		if !tableOwnError(err) {
			t.Errorf("%v: not taken for the table's own", err)
		}
	}
	notOwn := []error{
		wrap(errors.New("insert into ClickHouse: code: 516, message: Authentication failed")),
		wrap(context.Canceled),
		fmt.Errorf("%w (gave up: %w)", &block.ConvertError{Table: "a.t"}, context.Canceled),
		wrap(errors.New("read the table's definition from MySQL: connection refused")),
	}
	for _, err := range notOwn {
		if tableOwnError(err) {
			t.Errorf("%v: taken for the table's own", err)
		}
	}
}
