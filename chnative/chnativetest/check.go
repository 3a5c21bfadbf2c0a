package chnativetest

import (
	"fmt"
	"regexp"
	"strings"
)

var boolType = regexp.MustCompile(`\bBool\b`)

// How the server takes a data block against the INSERT's header, as
// NativeReader::read does with the header (src/Formats/NativeReader.cpp).
// Up to 23.2 a column the header lacks throws NOT_FOUND_COLUMN_IN_BLOCK
// (Block::getByName) and a type it cannot convert TYPE_MISMATCH
// (recursiveLowCardinalityTypeConversion: only LowCardinality added or
// removed, or an Enum for its own integer type). From 23.3 the query's
// format settings decide: an unknown column is dropped unless
// input_format_skip_unknown_fields=0 (on by default since 22.6), which
// throws INCORRECT_DATA; another type is CAST unless
// input_format_native_allow_types_conversion=0, which takes the old
// conversion. Either way a header column the block lacks is filled with
// defaults, and the block's columns are matched by name, not position.
//
// A real server thus stores, without a word, a block that is not the
// header: defaults for a column left out, a column dropped, values cast.
// For the client under test each of those is a divergence, so the server
// also records every difference from the header as a violation, which
// fails the test unless it takes it (TakeErrors).

// checkBlock compares block n (from 1) with the header; it returns the
// exception the server throws, if it throws one.
func (s *session) checkBlock(n int, header []Column, blk Block) *Exception {
	sc := &s.srv.script
	current := sc.Major > 23 || (sc.Major == 23 && sc.Minor >= 3)
	byName := map[string]Column{}
	for _, c := range header {
		byName[c.Name] = c
	}
	var diffs []string
	var ex *Exception
	seen := map[string]bool{}
	for i, c := range blk.Columns {
		seen[c.Name] = true
		h, ok := byName[c.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("column %s, which the header does not have", c.Name))
			if ex != nil {
				continue
			}
			if !current {
				ex = &Exception{10, "NOT_FOUND_COLUMN_IN_BLOCK", fmt.Sprintf("Not found column %s in block. There are only columns: %s", c.Name, names(header))}
			} else if s.settings["input_format_skip_unknown_fields"] == "0" {
				ex = &Exception{117, "INCORRECT_DATA", fmt.Sprintf("Unknown column with name %s found while reading data in Native format", c.Name)}
			}
		case !sameType(c.Type, h.Type):
			diffs = append(diffs, fmt.Sprintf("column %s as %s, the header's is %s", c.Name, c.Type, h.Type))
			if ex != nil || lowCardinalityOnly(c.Type, h.Type) {
				continue
			}
			if !current || s.settings["input_format_native_allow_types_conversion"] == "0" {
				ex = &Exception{53, "TYPE_MISMATCH", fmt.Sprintf("Cannot convert: %s to %s", c.Type, h.Type)}
			}
		case i >= len(header) || header[i].Name != c.Name:
			diffs = append(diffs, fmt.Sprintf("column %s at position %d, not the header's", c.Name, i+1))
		}
	}
	var lacks []string
	for _, h := range header {
		if !seen[h.Name] {
			lacks = append(lacks, h.Name)
		}
	}
	if len(lacks) > 0 {
		diffs = append(diffs, "no column "+strings.Join(lacks, ", ")+" (the server fills it with defaults)")
	}
	if len(diffs) > 0 {
		what := "stores it anyway"
		if ex != nil {
			what = fmt.Sprintf("throws %d %s", ex.Code, ex.Name)
		}
		s.srv.fail(fmt.Errorf("data block %d is not the header (%s): %s; the server %s", n, names(header), strings.Join(diffs, "; "), what))
	}
	return ex
}

func names(cols []Column) string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return strings.Join(out, ", ")
}

// sameType reports whether the server's type equality holds: the names
// parse to equal types (spaces aside), a DateTime's time zone does not
// count (IDataType::equals compares what is stored, UTC seconds), and
// Bool is UInt8 with another name.
func sameType(a, b string) bool {
	return canonicalType(a) == canonicalType(b)
}

func canonicalType(t string) string {
	var out strings.Builder
	quoted := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '\'' && (i == 0 || t[i-1] != '\\'):
			quoted = !quoted
		case c == ' ' && !quoted:
			continue
		}
		out.WriteByte(c)
	}
	s := out.String()
	// DateTime('tz') and DateTime64(p, 'tz'): the zone dropped.
	for _, name := range []string{"DateTime64(", "DateTime("} {
		for i := strings.Index(s, name); i >= 0; {
			j := i + len(name)
			end := strings.IndexByte(s[j:], ')')
			if end < 0 {
				break
			}
			args := s[j : j+end]
			if k := strings.Index(args, ",'"); k >= 0 {
				args = args[:k]
			} else if strings.HasPrefix(args, "'") {
				args = ""
			}
			repl := name + args + ")"
			if args == "" {
				repl = strings.TrimSuffix(name, "(")
			}
			s = s[:i] + repl + s[j+end+1:]
			next := strings.Index(s[i+len(repl):], name)
			if next < 0 {
				break
			}
			i += len(repl) + next
		}
	}
	return boolType.ReplaceAllString(s, "UInt8")
}

// lowCardinalityOnly: the types differ only by a LowCardinality, which
// the server adds or removes itself.
func lowCardinalityOnly(a, b string) bool {
	strip := func(t string) string {
		if strings.HasPrefix(t, "LowCardinality(") && strings.HasSuffix(t, ")") {
			return t[len("LowCardinality(") : len(t)-1]
		}
		return t
	}
	return sameType(strip(a), strip(b))
}
