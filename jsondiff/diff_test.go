package jsondiff_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/binlog2ch/binlog2ch/jsondiff"
	"github.com/binlog2ch/binlog2ch/jsondiff/jsondifftest"
)

// TestApplyDiff applies diffs to documents as go-mysql renders them, with
// the results MySQL gives for the same JSON_REPLACE, JSON_INSERT,
// JSON_ARRAY_INSERT and JSON_REMOVE (apply_json_diffs' semantics),
// written by hand. Keys here are ASCII, rendered as go-mysql does.
func TestApplyDiff(t *testing.T) {
	for _, c := range []struct {
		doc   string
		op    jsondiff.Op
		path  string
		value string
		want  string // "" with err set: rejected
		err   string
	}{
		// Objects.
		{`{"a":1}`, jsondiff.Replace, "$.a", `[2]`, `{"a":[2]}`, ""},
		{`{"a":1,"c":3}`, jsondiff.Insert, "$.b", `2`, `{"a":1,"b":2,"c":3}`, ""},
		{`{"b":1}`, jsondiff.Insert, "$.a", `0`, `{"a":0,"b":1}`, ""},
		{`{"a":1}`, jsondiff.Insert, "$.b", `{}`, `{"a":1,"b":{}}`, ""},
		{`{"a":1,"b":2}`, jsondiff.Remove, "$.a", ``, `{"b":2}`, ""},
		{`{"a":1}`, jsondiff.Remove, "$.a", ``, `{}`, ""},
		{`{}`, jsondiff.Insert, `$."x y"`, `null`, `{"x y":null}`, ""},
		{`{"a":{"b":{"c":[1]}}}`, jsondiff.Insert, "$.a.b.c[0]", `0`, `{"a":{"b":{"c":[0,1]}}}`, ""},
		// go-mysql's key order: the rendered key texts.
		{`{"a!":1,"a":2}`, jsondiff.Insert, `$."a "`, `0`, `{"a ":0,"a!":1,"a":2}`, ""},
		{`{"a!":1,"a":2}`, jsondiff.Insert, "$.aa", `0`, `{"a!":1,"a":2,"aa":0}`, ""},
		{`{"Z":1,"a":2}`, jsondiff.Insert, "$._", `0`, `{"Z":1,"_":0,"a":2}`, ""},
		// Arrays: JSON_ARRAY_INSERT positions; past the end appends.
		{`[1,2,3]`, jsondiff.Insert, "$[0]", `0`, `[0,1,2,3]`, ""},
		{`[1,2,3]`, jsondiff.Insert, "$[1]", `0`, `[1,0,2,3]`, ""},
		{`[1,2,3]`, jsondiff.Insert, "$[3]", `0`, `[1,2,3,0]`, ""},
		{`[1,2,3]`, jsondiff.Insert, "$[99]", `0`, `[1,2,3,0]`, ""},
		{`[1,2,3]`, jsondiff.Insert, "$[last]", `0`, `[1,2,0,3]`, ""},
		{`[1,2,3]`, jsondiff.Insert, "$[last-2]", `0`, `[0,1,2,3]`, ""},
		{`[1,2,3]`, jsondiff.Insert, "$[last-9]", `0`, `[0,1,2,3]`, ""},
		{`[]`, jsondiff.Insert, "$[0]", `"x"`, `["x"]`, ""},
		{`[]`, jsondiff.Insert, "$[last]", `"x"`, `["x"]`, ""},
		{`[1,2,3]`, jsondiff.Replace, "$[last]", `0`, `[1,2,0]`, ""},
		{`[1,2,3]`, jsondiff.Replace, "$[last-2]", `0`, `[0,2,3]`, ""},
		{`[1,2,3]`, jsondiff.Remove, "$[1]", ``, `[1,3]`, ""},
		{`[1,2,3]`, jsondiff.Remove, "$[last]", ``, `[1,2]`, ""},
		{`[1,2,3]`, jsondiff.Remove, "$[last-2]", ``, `[2,3]`, ""},
		{`[[1],{"a":[true]}]`, jsondiff.Replace, "$[1].a[0]", `false`, `[[1],{"a":[false]}]`, ""},
		// Rejected as a replica rejects them.
		{`[1,2,3]`, jsondiff.Replace, "$[3]", `0`, "", "no element [3] of an array of 3 to replace"},
		{`[]`, jsondiff.Replace, "$[last]", `0`, "", "no element [last] of an array of 0 to replace"},
		{`[1,2,3]`, jsondiff.Remove, "$[last-3]", ``, "", "no element [last-3] of an array of 3 to remove"},
		{`{"a":1}`, jsondiff.Replace, "$.b", `0`, "", `no member "b" to replace`},
		{`{"a":1}`, jsondiff.Insert, "$.a", `0`, "", `member "a" to insert is there already`},
		{`{"a":1}`, jsondiff.Remove, "$.b", ``, "", `no member "b" to remove`},
		{`{"a":[1]}`, jsondiff.Insert, "$.a[5].b", `0`, "", `no value at $."a"[5]`},
		// No auto-wrapping: a cell of a scalar is not the scalar.
		{`{"a":1}`, jsondiff.Replace, "$.a[0]", `0`, "", "not an object or an array but 1"},
		{`{"a":[1]}`, jsondiff.Remove, "$.a.b", ``, "", "an array and the step a member name"},
		{`{"a":{}}`, jsondiff.Insert, "$.a[0]", `0`, "", "an object and the step an array cell"},
		{`"s"`, jsondiff.Remove, "$[0]", ``, "", `not an object or an array but "s"`},
	} {
		legs, err := jsondiff.ParsePath(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		doc, err := jsondiff.ParseRendered(c.doc)
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		var value *jsondiff.Node
		if c.value != "" {
			if value, err = jsondiff.ParseRendered(c.value); err != nil {
				t.Fatalf("%s: %v", c.value, err)
			}
		}
		d := jsondiff.Diff{Op: c.op, Path: c.path, Legs: legs}
		got, err := jsondiff.Apply(doc, &d, value, strconv.Quote)
		switch {
		case c.err != "":
			if err == nil || !errors.Is(err, jsondiff.ErrNotApplied) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s %s: got %v, want %q", c.doc, c.op, c.path, err, c.err)
			}
		case err != nil:
			t.Errorf("%s %s %s: %v", c.doc, c.op, c.path, err)
		case string(got.AppendText(nil)) != c.want:
			t.Errorf("%s %s %s %s: got %s, want %s", c.doc, c.op, c.path, c.value, got.AppendText(nil), c.want)
		}
	}
}

func TestParseDiffVector(t *testing.T) {
	v := jsondifftest.Diffs{
		{Op: jsondiff.Replace, Path: "$.a", V: 1},
		{Op: jsondiff.Remove, Path: "$[last]"},
		{Op: jsondiff.Insert, Path: `$."k"[2]`, V: "x"},
	}.Vector()
	got, err := jsondiff.ParseVector(v)
	if err != nil || len(got) != 3 {
		t.Fatalf("got %+v, %v", got, err)
	}
	for i, want := range []struct {
		op    jsondiff.Op
		path  string
		value []byte
	}{{jsondiff.Replace, "$.a", jsondifftest.Binary(1)}, {jsondiff.Remove, "$[last]", nil}, {jsondiff.Insert, `$."k"[2]`, jsondifftest.Binary("x")}} {
		if got[i].Op != want.op || got[i].Path != want.path || string(got[i].Value) != string(want.value) {
			t.Errorf("diff %d: got %+v", i, got[i])
		}
	}
	// A path longer than 250 bytes has a 3-byte length.
	long := "$." + strings.Repeat("k", 300)
	if got, err := jsondiff.ParseVector(jsondifftest.Diffs{{Op: jsondiff.Remove, Path: long}}.Vector()); err != nil || len(got) != 1 || got[0].Legs[0].Name != long[2:] {
		t.Errorf("a long path: %+v, %v", got, err)
	}
	if got, err := jsondiff.ParseVector(nil); err != nil || len(got) != 0 {
		t.Errorf("empty: %+v, %v", got, err)
	}
}

func TestParsePath(t *testing.T) {
	for _, c := range []struct {
		path string
		want []jsondiff.Leg
	}{
		{"$.a", []jsondiff.Leg{{Member: true, Name: "a"}}},
		{` $ . a [ 3 ] [ last ] [last - 2].$b_1."c d"`, []jsondiff.Leg{{Member: true, Name: "a"}, {Index: 3}, {FromEnd: true}, {Index: 2, FromEnd: true}, {Member: true, Name: "$b_1"}, {Member: true, Name: "c d"}}},
		{`$."\u00e9\"\\\/\n".é`, []jsondiff.Leg{{Member: true, Name: "é\"\\/\n"}, {Member: true, Name: "é"}}},
		{`$."\ud83d\ude00"[4294967295]`, []jsondiff.Leg{{Member: true, Name: "😀"}, {Index: 4294967295}}},
		{`$.""`, []jsondiff.Leg{{Member: true, Name: ""}}},
	} {
		got, err := jsondiff.ParsePath(c.path)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.path, got, err, c.want)
		}
	}
	for _, p := range []string{"", "$", "$.", "$[", "$[1", "$[-1]", "$[4294967296]", "$[last-]", "$.a b", "$.*", `$."a`, `$."\ud800"`, `$."\udc00"`, `$."\x"`, "$.a\x01", "$..a", "$[1]x"} {
		if legs, err := jsondiff.ParsePath(p); err == nil {
			t.Errorf("%q: got %+v, want an error", p, legs)
		}
	}
}

func TestLengthEncoded(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		v    uint64
		n    int
		okay bool
	}{
		{[]byte{250}, 250, 1, true},
		{[]byte{252, 0x34, 0x12}, 0x1234, 3, true},
		{[]byte{253, 1, 2, 3}, 0x030201, 4, true},
		{[]byte{254, 1, 0, 0, 0, 0, 0, 0, 2}, 0x0200000000000001, 9, true},
		{[]byte{251}, 0, 0, false},
		{[]byte{255}, 0, 0, false},
		{[]byte{252, 1}, 0, 0, false},
		{nil, 0, 0, false},
	} {
		if v, n, ok := jsondiff.LengthEncoded(c.b); v != c.v || n != c.n || ok != c.okay {
			t.Errorf("% x: got %d, %d, %v", c.b, v, n, ok)
		}
	}
}

// TestJSONTextRoundTrip: go-mysql's renderings parse and render back byte
// for byte; one in another key order is refused.
func TestJSONTextRoundTrip(t *testing.T) {
	for _, s := range []string{`{}`, `[]`, `"a\"b\\"`, `-1.5e-07`, `{"\u003c":[1,{"a":null}],"a!":true,"a":false,"é":"\u2028"}`, `[[[]],{}]`} {
		n, err := jsondiff.ParseRendered(s)
		if err != nil || string(n.AppendText(nil)) != s {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a":1`, `[1,]`, `tru`, `1 2`, `{"a" 1}`, `"abc`} {
		if _, err := jsondiff.ParseText(s); err == nil {
			t.Errorf("%s: parsed", s)
		}
	}
}

// TestJSONStringBinary: member names go through go-mysql as binary JSON
// strings, lengths of several bytes included.
