package jsondiff

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Node is a JSON document as go-mysql renders it: objects and arrays
// as trees, every scalar as the text go-mysql gave it, every object key as
// its rendered text, quotes included. Rendering it again writes exactly
// those texts, compact, as go-mysql does, so a document with a value
// replaced is the text go-mysql gives for that document whole as long as
// the new value is go-mysql's rendering of it and the keys keep go-mysql's
// order.
//
// That order: go-mysql decodes an object into a map[string]any and renders
// it with github.com/goccy/go-json's Marshal, which sorts the members by
// their encoded keys, byte for byte (bytes.Compare on `"key",`; goccy
// internal/encoder Mapslice.Less). That is the order of the rendered key
// texts, quotes included, compared as strings; it is not MySQL's order
// (by length, then bytes) nor encoding/json's (the raw keys): "a!" comes
// before "a" because '!' < '"'. The parser checks the documents it reads
// are in that order, so another rendering (go-mysql's
// RenderJSONAsMySQLText keeps MySQL's) fails loudly rather than putting
// inserted members in the wrong place.
type Node struct {
	kind byte   // '{', '[', or 0 for a scalar
	raw  string // a scalar's text
	keys []string
	vals []*Node
}

// ParseText reads go-mysql's rendering of a JSON document.
func ParseText(s string) (*Node, error) {
	p := jsonParser{s: s}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.i != len(s) {
		return nil, fmt.Errorf("text after the document at offset %d", p.i)
	}
	return n, nil
}

type jsonParser struct {
	s string
	i int
}

func (p *jsonParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonParser) fail(what string) error {
	return fmt.Errorf("%s at offset %d", what, p.i)
}

func (p *jsonParser) value(depth int) (*Node, error) {
	if depth > 10000 {
		return nil, p.fail("nested too deep")
	}
	p.skipSpace()
	if p.i >= len(p.s) {
		return nil, p.fail("a value missing")
	}
	switch p.s[p.i] {
	case '{':
		n := &Node{kind: '{'}
		p.i++
		if p.skipSpace(); p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return n, nil
		}
		for {
			p.skipSpace()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, p.fail("a member without its key")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			if len(n.keys) > 0 && n.keys[len(n.keys)-1] >= k {
				return nil, p.fail("an object whose keys are not in go-mysql's order")
			}
			if p.skipSpace(); p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.fail("a member without its ':'")
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.keys, n.vals = append(n.keys, k), append(n.vals, v)
			if done, err := p.next('}'); done || err != nil {
				return n, err
			}
		}
	case '[':
		n := &Node{kind: '['}
		p.i++
		if p.skipSpace(); p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return n, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
			if done, err := p.next(']'); done || err != nil {
				return n, err
			}
		}
	case '"':
		s, err := p.str()
		return &Node{raw: s}, err
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune(",]}: \t\n\r", rune(p.s[p.i])) {
		p.i++
	}
	t := p.s[start:p.i]
	switch {
	case t == "true", t == "false", t == "null":
	case t != "" && (t[0] == '-' || t[0] >= '0' && t[0] <= '9'):
		if _, err := strconv.ParseFloat(t, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("a bad number %q at offset %d", t, start)
		}
	default:
		return nil, fmt.Errorf("a bad value %q at offset %d", t, start)
	}
	return &Node{raw: t}, nil
}

// next reads the ',' before another element or the closing byte.
func (p *jsonParser) next(closing byte) (done bool, err error) {
	p.skipSpace()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ',':
			p.i++
			return false, nil
		case closing:
			p.i++
			return true, nil
		}
	}
	return true, p.fail("an unterminated object or array")
}

// str reads a string token, quotes included, as it is written.
func (p *jsonParser) str() (string, error) {
	start := p.i
	for p.i++; p.i < len(p.s); p.i++ {
		switch p.s[p.i] {
		case '\\':
			p.i++
		case '"':
			p.i++
			return p.s[start:p.i], nil
		}
	}
	return "", fmt.Errorf("an unterminated string at offset %d", start)
}

// AppendText renders the node compact, as go-mysql does.
func (n *Node) AppendText(b []byte) []byte {
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(b, k...), ':')
			b = n.vals[i].AppendText(b)
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.AppendText(b)
		}
		return append(b, ']')
	}
	return append(b, n.raw...)
}

// find is the index of the member with the rendered key k, or -1.
func (n *Node) find(k string) int {
	for i, key := range n.keys {
		if key == k {
			return i
		}
	}
	return -1
}

// ParseRendered parses go-mysql's rendering of a JSON value and checks it
// renders back to the same text.
func ParseRendered(text string) (*Node, error) {
	n, err := ParseText(text)
	if err != nil {
		return nil, fmt.Errorf("go-mysql's text %.80q: %v", text, err)
	}
	if string(n.AppendText(nil)) != text {
		return nil, fmt.Errorf("go-mysql's text %.80q does not render back byte for byte", text)
	}
	return n, nil
}
