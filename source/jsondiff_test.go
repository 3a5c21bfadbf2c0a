package source

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestApplyDiff applies diffs to documents as go-mysql renders them, with
// the results MySQL gives for the same JSON_REPLACE, JSON_INSERT,
// JSON_ARRAY_INSERT and JSON_REMOVE (apply_json_diffs' semantics),
// written by hand. Keys here are ASCII, rendered as go-mysql does.
func TestApplyDiff(t *testing.T) {
	for _, c := range []struct {
		doc   string
		op    jsonDiffOp
		path  string
		value string
		want  string // "" with err set: rejected
		err   string
	}{
		// Objects.
		{`{"a":1}`, diffReplace, "$.a", `[2]`, `{"a":[2]}`, ""},
		{`{"a":1,"c":3}`, diffInsert, "$.b", `2`, `{"a":1,"b":2,"c":3}`, ""},
		{`{"b":1}`, diffInsert, "$.a", `0`, `{"a":0,"b":1}`, ""},
		{`{"a":1}`, diffInsert, "$.b", `{}`, `{"a":1,"b":{}}`, ""},
		{`{"a":1,"b":2}`, diffRemove, "$.a", ``, `{"b":2}`, ""},
		{`{"a":1}`, diffRemove, "$.a", ``, `{}`, ""},
		{`{}`, diffInsert, `$."x y"`, `null`, `{"x y":null}`, ""},
		{`{"a":{"b":{"c":[1]}}}`, diffInsert, "$.a.b.c[0]", `0`, `{"a":{"b":{"c":[0,1]}}}`, ""},
		// go-mysql's key order: the rendered key texts.
		{`{"a!":1,"a":2}`, diffInsert, `$."a "`, `0`, `{"a ":0,"a!":1,"a":2}`, ""},
		{`{"a!":1,"a":2}`, diffInsert, "$.aa", `0`, `{"a!":1,"a":2,"aa":0}`, ""},
		{`{"Z":1,"a":2}`, diffInsert, "$._", `0`, `{"Z":1,"_":0,"a":2}`, ""},
		// Arrays: JSON_ARRAY_INSERT positions; past the end appends.
		{`[1,2,3]`, diffInsert, "$[0]", `0`, `[0,1,2,3]`, ""},
		{`[1,2,3]`, diffInsert, "$[1]", `0`, `[1,0,2,3]`, ""},
		{`[1,2,3]`, diffInsert, "$[3]", `0`, `[1,2,3,0]`, ""},
		{`[1,2,3]`, diffInsert, "$[99]", `0`, `[1,2,3,0]`, ""},
		{`[1,2,3]`, diffInsert, "$[last]", `0`, `[1,2,0,3]`, ""},
		{`[1,2,3]`, diffInsert, "$[last-2]", `0`, `[0,1,2,3]`, ""},
		{`[1,2,3]`, diffInsert, "$[last-9]", `0`, `[0,1,2,3]`, ""},
		{`[]`, diffInsert, "$[0]", `"x"`, `["x"]`, ""},
		{`[]`, diffInsert, "$[last]", `"x"`, `["x"]`, ""},
		{`[1,2,3]`, diffReplace, "$[last]", `0`, `[1,2,0]`, ""},
		{`[1,2,3]`, diffReplace, "$[last-2]", `0`, `[0,2,3]`, ""},
		{`[1,2,3]`, diffRemove, "$[1]", ``, `[1,3]`, ""},
		{`[1,2,3]`, diffRemove, "$[last]", ``, `[1,2]`, ""},
		{`[1,2,3]`, diffRemove, "$[last-2]", ``, `[2,3]`, ""},
		{`[[1],{"a":[true]}]`, diffReplace, "$[1].a[0]", `false`, `[[1],{"a":[false]}]`, ""},
		// Rejected as a replica rejects them.
		{`[1,2,3]`, diffReplace, "$[3]", `0`, "", "no element [3] of an array of 3 to replace"},
		{`[]`, diffReplace, "$[last]", `0`, "", "no element [last] of an array of 0 to replace"},
		{`[1,2,3]`, diffRemove, "$[last-3]", ``, "", "no element [last-3] of an array of 3 to remove"},
		{`{"a":1}`, diffReplace, "$.b", `0`, "", `no member "b" to replace`},
		{`{"a":1}`, diffInsert, "$.a", `0`, "", `member "a" to insert is there already`},
		{`{"a":1}`, diffRemove, "$.b", ``, "", `no member "b" to remove`},
		{`{"a":[1]}`, diffInsert, "$.a[5].b", `0`, "", `no value at $."a"[5]`},
		// No auto-wrapping: a cell of a scalar is not the scalar.
		{`{"a":1}`, diffReplace, "$.a[0]", `0`, "", "not an object or an array but 1"},
		{`{"a":[1]}`, diffRemove, "$.a.b", ``, "", "an array and the step a member name"},
		{`{"a":{}}`, diffInsert, "$.a[0]", `0`, "", "an object and the step an array cell"},
		{`"s"`, diffRemove, "$[0]", ``, "", `not an object or an array but "s"`},
	} {
		legs, err := parsePath(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		doc, err := parseRendered(c.doc)
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		var value *jsonNode
		if c.value != "" {
			if value, err = parseRendered(c.value); err != nil {
				t.Fatalf("%s: %v", c.value, err)
			}
		}
		d := jsonDiff{op: c.op, path: c.path, legs: legs}
		got, err := applyDiff(doc, &d, value, strconv.Quote)
		switch {
		case c.err != "":
			if err == nil || !errors.Is(err, errNotApplied) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s %s: got %v, want %q", c.doc, c.op, c.path, err, c.err)
			}
		case err != nil:
			t.Errorf("%s %s %s: %v", c.doc, c.op, c.path, err)
		case string(got.appendText(nil)) != c.want:
			t.Errorf("%s %s %s %s: got %s, want %s", c.doc, c.op, c.path, c.value, got.appendText(nil), c.want)
		}
	}
}

func TestParseDiffVector(t *testing.T) {
	v := diffs{
		{op: diffReplace, path: "$.a", v: 1},
		{op: diffRemove, path: "$[last]"},
		{op: diffInsert, path: `$."k"[2]`, v: "x"},
	}.vector()
	got, err := parseDiffVector(v)
	if err != nil || len(got) != 3 {
		t.Fatalf("got %+v, %v", got, err)
	}
	for i, want := range []struct {
		op    jsonDiffOp
		path  string
		value []byte
	}{{diffReplace, "$.a", jbin(1)}, {diffRemove, "$[last]", nil}, {diffInsert, `$."k"[2]`, jbin("x")}} {
		if got[i].op != want.op || got[i].path != want.path || string(got[i].value) != string(want.value) {
			t.Errorf("diff %d: got %+v", i, got[i])
		}
	}
	// A path longer than 250 bytes has a 3-byte length.
	long := "$." + strings.Repeat("k", 300)
	if got, err := parseDiffVector(diffs{{op: diffRemove, path: long}}.vector()); err != nil || len(got) != 1 || got[0].legs[0].name != long[2:] {
		t.Errorf("a long path: %+v, %v", got, err)
	}
	if got, err := parseDiffVector(nil); err != nil || len(got) != 0 {
		t.Errorf("empty: %+v, %v", got, err)
	}
}
