// Package jsondiff applies MySQL's partial JSON updates: it reads a
// Json_diff_vector, its paths, and applies the diffs to a document held as
// go-mysql's text rendering, as a MySQL replica does. It is a pure library:
// it must not know of binlog events, tables or servers (the binlog package
// finds the vectors in row images and hands them here).
package jsondiff

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MySQL's partial JSON updates (binlog_row_value_options=PARTIAL_JSON): in
// the after image of a PARTIAL_UPDATE_ROWS_EVENT a JSON column may hold a
// diff vector instead of the document. This file reads the vector
// (Json_diff_vector::write_binary in MySQL's sql/json_diff.cc), its paths
// (Json_path::to_string and parse_path in sql-common/json_path.cc), and
// applies it to the before image's document as a MySQL replica does
// (apply_json_diffs in sql/json_diff.cc): a diff that a replica would
// reject is an error here too, never a guess.
//
// The documents are handled as go-mysql's text rendering of them (see
// Node), so that the document built from the diffs is, byte for byte,
// the text go-mysql gives for the same document written whole.

// Op is a diff's operation (enum_json_diff_operation).
type Op byte

const (
	// Replace replaces the value at the path, which must exist
	// (JSON_REPLACE).
	Replace Op = 0
	// Insert adds a member that must not exist to an object
	// (JSON_INSERT), or a value at a position of an array, shifting the
	// later ones (JSON_ARRAY_INSERT; past the end: appended).
	Insert Op = 1
	// Remove removes the member or the array element at the path,
	// which must exist (JSON_REMOVE).
	Remove Op = 2
)

func (op Op) String() string {
	switch op {
	case Replace:
		return "REPLACE"
	case Insert:
		return "INSERT"
	case Remove:
		return "REMOVE"
	}
	return "operation " + strconv.Itoa(int(op))
}

// Diff is one diff of a vector.
type Diff struct {
	Op    Op
	Path  string // as written
	Legs  []Leg
	Value []byte // MySQL binary JSON; nil for Remove
}

// Leg is one step of a diff's path: an object member or an array cell.
type Leg struct {
	Member  bool
	Name    string // member: the key, unescaped
	Index   uint32 // cell: [index], or [last-index] when FromEnd
	FromEnd bool
}

// position is the cell's index in an array of n elements (clamped to 0..n,
// as Json_array_index does) and whether it is an element of it.
func (l Leg) position(n int) (pos int, within bool) {
	i := int(l.Index)
	within = i < n
	switch {
	case l.FromEnd && within:
		pos = n - i - 1
	case l.FromEnd:
		pos = 0
	default:
		pos = min(i, n)
	}
	return pos, within
}

var errCorruptDiff = errors.New("corrupt JSON diff vector")

// ParseVector reads the diffs of a vector (what follows its 4-byte
// length): each an operation byte, a length-encoded path length and the
// path, and except for a removal a length-encoded value length and the
// value in MySQL's binary JSON format.
func ParseVector(b []byte) ([]Diff, error) {
	var diffs []Diff
	for len(b) > 0 {
		d := Diff{Op: Op(b[0])}
		if d.Op > Remove {
			return nil, fmt.Errorf("%w: diff %d has operation %d", errCorruptDiff, len(diffs)+1, b[0])
		}
		b = b[1:]
		pathLen, n, ok := LengthEncoded(b)
		if !ok || pathLen > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: diff %d: its path runs past the vector", errCorruptDiff, len(diffs)+1)
		}
		d.Path = string(b[n : n+int(pathLen)])
		b = b[n+int(pathLen):]
		var err error
		if d.Legs, err = ParsePath(d.Path); err != nil {
			return nil, fmt.Errorf("%w: diff %d: path %q: %v", errCorruptDiff, len(diffs)+1, d.Path, err)
		}
		if d.Op != Remove {
			valueLen, n, ok := LengthEncoded(b)
			if !ok || valueLen > uint64(len(b)-n) {
				return nil, fmt.Errorf("%w: diff %d (%s %s): its value runs past the vector", errCorruptDiff, len(diffs)+1, d.Op, d.Path)
			}
			if valueLen == 0 {
				return nil, fmt.Errorf("%w: diff %d (%s %s): an empty value", errCorruptDiff, len(diffs)+1, d.Op, d.Path)
			}
			d.Value = b[n : n+int(valueLen)]
			b = b[n+int(valueLen):]
		}
		diffs = append(diffs, d)
	}
	return diffs, nil
}

// LengthEncoded reads a length-encoded integer (MySQL's
// net_field_length_checked); ok is false when b is too short or holds the
// NULL marker 251.
func LengthEncoded(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch c := b[0]; {
	case c < 251:
		return uint64(c), 1, true
	case c == 252:
		n = 3
	case c == 253:
		n = 4
	case c == 254:
		n = 9
	default:
		return 0, 0, false
	}
	if len(b) < n {
		return 0, 0, false
	}
	for i := n - 1; i >= 1; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, n, true
}

// ParsePath parses a diff's path as MySQL's parse_path does: "$", then
// members (.name, or ."quoted name" with JSON escapes) and array cells
// ([n], [last], [last-n]), whitespace allowed between tokens. Wildcards,
// ranges and ** match many values and never appear in a diff; the path "$"
// (the whole document) never does either: a replica rejects them, and so
// does this.
func ParsePath(p string) ([]Leg, error) {
	i := skipPathSpace(p, 0)
	if i >= len(p) || p[i] != '$' {
		return nil, errors.New("does not start with $")
	}
	i = skipPathSpace(p, i+1)
	var legs []Leg
	for i < len(p) {
		var leg Leg
		var err error
		switch p[i] {
		case '.':
			leg, i, err = parseMemberLeg(p, i+1)
		case '[':
			leg, i, err = parseCellLeg(p, i+1)
		case '*':
			return nil, errors.New("a ** wildcard")
		default:
			return nil, fmt.Errorf("unexpected %q at offset %d", p[i], i)
		}
		if err != nil {
			return nil, err
		}
		legs = append(legs, leg)
		i = skipPathSpace(p, i)
	}
	if len(legs) == 0 {
		return nil, errors.New("the whole document ($), which a diff never replaces, inserts or removes")
	}
	return legs, nil
}

// skipPathSpace skips what MySQL's path parser takes for whitespace.
func skipPathSpace(p string, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] >= '\t' && p[i] <= '\r') {
		i++
	}
	return i
}

func parseMemberLeg(p string, i int) (Leg, int, error) {
	i = skipPathSpace(p, i)
	if i >= len(p) {
		return Leg{}, i, errors.New("ends after a '.'")
	}
	if p[i] == '*' {
		return Leg{}, i, errors.New("a .* wildcard")
	}
	if p[i] == '"' {
		end := i + 1
		for end < len(p) && p[end] != '"' {
			if p[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(p) {
			return Leg{}, i, errors.New("an unterminated quoted member name")
		}
		name, err := unescapeJSONString(p[i+1 : end])
		if err != nil {
			return Leg{}, i, fmt.Errorf("member name %s: %v", p[i:end+1], err)
		}
		return Leg{Member: true, Name: name}, end + 1, nil
	}
	end := i
	for end < len(p) && p[end] != '[' && p[end] != '.' && p[end] != '*' && skipPathSpace(p, end) == end {
		end++
	}
	// MySQL unescapes an unquoted name too, then requires an ECMAScript
	// identifier (which it prints unquoted; anything else it quotes).
	name, err := unescapeJSONString(p[i:end])
	if err != nil || !identifier(name) {
		return Leg{}, i, fmt.Errorf("member name %q is neither quoted nor an identifier", p[i:end])
	}
	return Leg{Member: true, Name: name}, end, nil
}

// identifier is MySQL's is_ecmascript_identifier for ASCII (letters, $
// and _, then digits too); characters beyond ASCII are taken as MySQL
// took them when it wrote the name unquoted.
func identifier(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80, c == '$', c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func parseCellLeg(p string, i int) (Leg, int, error) {
	i = skipPathSpace(p, i)
	if i >= len(p) {
		return Leg{}, i, errors.New("ends after a '['")
	}
	if p[i] == '*' {
		return Leg{}, i, errors.New("a [*] wildcard")
	}
	leg := Leg{}
	if strings.HasPrefix(p[i:], "last") {
		leg.FromEnd = true
		i = skipPathSpace(p, i+4)
		if i < len(p) && p[i] == '-' {
			i = skipPathSpace(p, i+1)
		} else {
			return closeCell(p, i, leg)
		}
	}
	end := i
	for end < len(p) && p[end] >= '0' && p[end] <= '9' {
		end++
	}
	if end == i {
		return Leg{}, i, errors.New("an array index that is not a number")
	}
	n, err := strconv.ParseUint(p[i:end], 10, 32)
	if err != nil {
		return Leg{}, i, fmt.Errorf("array index %s out of range", p[i:end])
	}
	leg.Index = uint32(n)
	return closeCell(p, skipPathSpace(p, end), leg)
}

func closeCell(p string, i int, leg Leg) (Leg, int, error) {
	if i < len(p) && p[i] == ']' {
		return leg, i + 1, nil
	}
	if strings.HasPrefix(p[i:], "to") {
		return Leg{}, i, errors.New("an array range")
	}
	return Leg{}, i, errors.New("an array cell without its ']'")
}

// unescapeJSONString decodes the inside of a JSON string as MySQL's JSON
// parser does: the JSON escapes (a \u escape of a high surrogate must be
// followed by one of a low surrogate), no raw control characters, other
// bytes as they are.
func unescapeJSONString(s string) (string, error) {
	if !strings.ContainsAny(s, "\\\"") {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 {
				return "", errors.New("a control character")
			}
		}
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20:
			return "", errors.New("a control character")
		case c == '"':
			return "", errors.New("an unescaped '\"'")
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", errors.New("ends in a '\\'")
		}
		switch s[i] {
		case '"', '\\', '/':
			b.WriteByte(s[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return "", errors.New("a bad \\u escape")
			}
			i += 4
			if r >= 0xdc00 && r <= 0xdfff {
				return "", errors.New("a lone low surrogate")
			}
			if r >= 0xd800 && r <= 0xdbff {
				lo, ok := hex4(s, i+3)
				if !ok || s[i+1] != '\\' || s[i+2] != 'u' || lo < 0xdc00 || lo > 0xdfff {
					return "", errors.New("a high surrogate without its low one")
				}
				i += 6
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			}
			b.WriteRune(r)
		default:
			return "", fmt.Errorf("an unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

// hex4 reads the 4 hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 32)
	return rune(v), err == nil
}

// ErrNotApplied: a diff a MySQL replica would reject (apply_json_diffs
// returns REJECTED), the document not being the one the diff was made
// from.
var ErrNotApplied = errors.New("the before image's document does not have what the diff changes")

// Apply applies d to doc as apply_json_diffs does, value being the
// new value (nil for a removal) and key the rendered key of each member
// name in d's path. It returns the document (doc, changed in place).
func Apply(doc *Node, d *Diff, value *Node, key func(name string) string) (*Node, error) {
	// The parent of the path's last leg, found exactly: no auto-wrapping,
	// only existing members and elements.
	parent := doc
	for i, leg := range d.Legs[:len(d.Legs)-1] {
		if parent = child(parent, leg, key); parent == nil {
			return nil, fmt.Errorf("%w: no value at %s", ErrNotApplied, pathText(d.Legs[:i+1]))
		}
	}
	last := d.Legs[len(d.Legs)-1]
	switch {
	case parent.kind == '{' && last.Member:
		k := key(last.Name)
		i := parent.find(k)
		switch d.Op {
		case Replace:
			if i < 0 {
				return nil, fmt.Errorf("%w: no member %s to replace", ErrNotApplied, k)
			}
			parent.vals[i] = value
		case Insert:
			if i >= 0 {
				return nil, fmt.Errorf("%w: member %s to insert is there already", ErrNotApplied, k)
			}
			at := 0
			for at < len(parent.keys) && parent.keys[at] < k {
				at++
			}
			parent.keys = insertAt(parent.keys, at, k)
			parent.vals = insertAt(parent.vals, at, value)
		case Remove:
			if i < 0 {
				return nil, fmt.Errorf("%w: no member %s to remove", ErrNotApplied, k)
			}
			parent.keys = append(parent.keys[:i], parent.keys[i+1:]...)
			parent.vals = append(parent.vals[:i], parent.vals[i+1:]...)
		}
	case parent.kind == '[' && !last.Member:
		pos, within := last.position(len(parent.vals))
		switch d.Op {
		case Replace:
			if !within {
				return nil, fmt.Errorf("%w: no element %s of an array of %d to replace", ErrNotApplied, cellText(last), len(parent.vals))
			}
			parent.vals[pos] = value
		case Insert:
			parent.vals = insertAt(parent.vals, pos, value)
		case Remove:
			if !within {
				return nil, fmt.Errorf("%w: no element %s of an array of %d to remove", ErrNotApplied, cellText(last), len(parent.vals))
			}
			parent.vals = append(parent.vals[:pos], parent.vals[pos+1:]...)
		}
	default:
		return nil, fmt.Errorf("%w: the parent of the last step is %s", ErrNotApplied, kindName(parent))
	}
	return doc, nil
}

// child is the member or element leg names in n, or nil.
func child(n *Node, leg Leg, key func(string) string) *Node {
	switch {
	case n.kind == '{' && leg.Member:
		if i := n.find(key(leg.Name)); i >= 0 {
			return n.vals[i]
		}
	case n.kind == '[' && !leg.Member:
		if pos, within := leg.position(len(n.vals)); within {
			return n.vals[pos]
		}
	}
	return nil
}

func insertAt[T any](s []T, i int, v T) []T {
	s = append(s, v)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// pathText renders legs (member names quoted, for messages).
func pathText(legs []Leg) string {
	b := []byte{'$'}
	for _, l := range legs {
		if l.Member {
			b = append(append(b, '.'), strconv.Quote(l.Name)...)
		} else {
			b = append(b, cellText(l)...)
		}
	}
	return string(b)
}

func cellText(l Leg) string {
	switch {
	case l.FromEnd && l.Index == 0:
		return "[last]"
	case l.FromEnd:
		return "[last-" + strconv.FormatUint(uint64(l.Index), 10) + "]"
	}
	return "[" + strconv.FormatUint(uint64(l.Index), 10) + "]"
}

func kindName(n *Node) string {
	switch n.kind {
	case '{':
		return "an object and the step an array cell"
	case '[':
		return "an array and the step a member name"
	}
	v := n.raw
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return "not an object or an array but " + v
}
