package chnative

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/chnative/chnativetest"
)

// The scripted server refuses what ClickHouse refuses, and takes as a
// violation of the protocol's contract what ClickHouse stores changed
// without a word (chnativetest/check.go).

// TestScriptedServerRefusesCredentials: a wrong user or password is
// exception 516 with the server's text; a script without a user takes
// default without a password, as a fresh server. (No user at all, 101,
// chnative never sends: it says default.)
func TestScriptedServerRefusesCredentials(t *testing.T) {
	for _, tc := range []struct {
		name           string
		script         chnativetest.Script
		user, password string
		code           int32
		text           string
	}{
		{"a wrong password", server26(chnativetest.MethodLZ4), "u", "x", 516, "u: Authentication failed: password is incorrect, or there is no user with such name."},
		{"a wrong user", server26(chnativetest.MethodLZ4), "default", "p", 516, "default: Authentication failed"},
		{"default with a password", chnativetest.Script{Major: 26, Minor: 9, Revision: chnativetest.Revision26}, "default", "p", 516, "default: Authentication failed"},
		{"another user of a fresh server", chnativetest.Script{Major: 26, Minor: 9, Revision: chnativetest.Revision26}, "u", "", 516, "u: Authentication failed"},
		{"default of a fresh server", chnativetest.Script{Major: 26, Minor: 9, Revision: chnativetest.Revision26}, "default", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := chnativetest.Start(t, tc.script)
			c, err := Dial(context.Background(), Options{Addr: []string{srv.Addr()}, User: tc.user, Password: tc.password})
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			var ex *Exception
			if !errors.As(err, &ex) || ex.Code != tc.code || !strings.Contains(ex.Message, tc.text) {
				t.Fatalf("got %v, want exception %d %q", err, tc.code, tc.text)
			}
		})
	}
}

// TestScriptedServerRefusesBlocks: a data block that is not the header,
// by name, type or order. ClickHouse 18.16 to 23.2 throws for a column
// the header lacks (10) and a type it cannot convert (53); from 23.3 it
// throws only under the strict format settings (117, 53) and otherwise
// stores the block changed. The scripted server answers each as the
// server would, and records every difference as a violation.
func TestScriptedServerRefusesBlocks(t *testing.T) {
	type col struct{ name, typ string }
	old := chnativetest.Script{Major: 18, Minor: 16, Patch: 1, Revision: 54412, User: "u", Password: "p"}
	strict := server26(chnativetest.MethodZSTD)
	strict.Settings["input_format_skip_unknown_fields"] = "Bool"
	strict.Settings["input_format_native_allow_types_conversion"] = "Bool"
	strictSettings := func(Server) []Setting {
		return []Setting{{Name: "input_format_skip_unknown_fields", Value: 0}, {Name: "input_format_native_allow_types_conversion", Value: 0}}
	}
	for _, tc := range []struct {
		name      string
		script    chnativetest.Script
		settings  func(Server) []Setting
		cols      []col
		code      int32 // 0: stored
		text      string
		violation string
	}{
		{"18.16: a column the header lacks", old, nil, []col{{"a", "UInt32"}, {"c", "UInt32"}}, 10, "Not found column c in block. There are only columns: a, b", "column c, which the header does not have"},
		{"18.16: another type", old, nil, []col{{"a", "UInt32"}, {"b", "UInt64"}}, 53, "Cannot convert: UInt64 to UInt32", "column b as UInt64, the header's is UInt32"},
		{"26.x: a column the header lacks, dropped", server26(chnativetest.MethodZSTD), nil, []col{{"a", "UInt32"}, {"c", "UInt32"}}, 0, "", "no column b (the server fills it with defaults)"},
		{"26.x: another type, cast", server26(chnativetest.MethodZSTD), nil, []col{{"a", "UInt32"}, {"b", "Int32"}}, 0, "", "column b as Int32"},
		{"26.x strict: a column the header lacks", strict, strictSettings, []col{{"a", "UInt32"}, {"c", "UInt32"}}, 117, "Unknown column with name c found while reading data in Native format", "column c"},
		{"26.x strict: another type", strict, strictSettings, []col{{"a", "UInt32"}, {"b", "Int32"}}, 53, "Cannot convert: Int32 to UInt32", "column b as Int32"},
		{"26.x: one column too few", server26(chnativetest.MethodZSTD), nil, []col{{"a", "UInt32"}}, 0, "", "no column b"},
		{"26.x: the header's columns in another order", server26(chnativetest.MethodZSTD), nil, []col{{"b", "UInt32"}, {"a", "UInt32"}}, 0, "", "column b at position 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := chnativetest.Start(t, tc.script)
			c := dialScripted(t, srv, tc.settings)
			err := c.Insert(context.Background(), "INSERT INTO d.t (a, b)", func([]Column) error { return nil }, func(e *Encoder) error {
				e.StartBlock(len(tc.cols), 1)
				for _, cl := range tc.cols {
					e.Column(cl.name, cl.typ)
					if strings.HasSuffix(cl.typ, "64") {
						e.Uint64(1)
					} else {
						e.Uint32(1)
					}
				}
				return nil
			})
			var ex *Exception
			switch {
			case tc.code == 0 && err != nil:
				t.Fatalf("got %v, want the block stored as the server would", err)
			case tc.code != 0 && (!errors.As(err, &ex) || ex.Code != tc.code || !strings.Contains(ex.Message, tc.text)):
				t.Fatalf("got %v, want exception %d %q", err, tc.code, tc.text)
			}
			c.Close()
			srv.Close()
			errs := srv.TakeErrors()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.violation) {
				t.Errorf("violations %v, want one naming %q", errs, tc.violation)
			}
		})
	}
	// Spelling is not a difference: the server parses the names.
	header := []chnativetest.Column{{Name: "a", Type: "DateTime64(3, 'UTC')"}, {Name: "b", Type: "Bool"}}
	script := server26(chnativetest.MethodZSTD)
	script.Header = func(string) []chnativetest.Column { return header }
	srv := chnativetest.Start(t, script)
	c := dialScripted(t, srv, nil)
	if err := c.Insert(context.Background(), "INSERT INTO d.t (a, b)", func([]Column) error { return nil }, func(e *Encoder) error {
		e.StartBlock(2, 1)
		e.Column("a", "DateTime64(3,'Europe/Berlin')")
		e.Uint64(1)
		e.Column("b", "UInt8")
		e.Uint8(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
