package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder applies a YAML node tree to a config struct strictly: unknown
// keys, duplicate keys and values of the wrong type are problems named by
// their dotted path and line, collected rather than stopping at the first.
// yaml.v3's own strict mode reports "field x not found in type y" with
// Go type names, which tells an operator little.
type decoder struct {
	lookupEnv func(string) (string, bool)
	problems  []Problem
	lines     map[string]int // key path -> line, for later validation errors
}

var durationType = reflect.TypeOf(time.Duration(0))

func (d *decoder) typeProblem(n *yaml.Node, key, want string) {
	got := map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list", yaml.ScalarNode: "a scalar"}[n.Kind]
	d.problems = append(d.problems, Problem{Key: key, Line: n.Line, Msg: "want " + want + ", got " + got})
}

func (d *decoder) valueProblem(n *yaml.Node, key, msg string) {
	d.problems = append(d.problems, Problem{Key: key, Line: n.Line, Msg: msg})
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// decode stores node n into the value pointed to by ptr, key being n's path.
func (d *decoder) decode(n *yaml.Node, ptr any, key string) {
	d.value(n, reflect.ValueOf(ptr).Elem(), key)
}

func (d *decoder) value(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if key != "" {
		d.lines[key] = n.Line
	}
	// An empty value (`key:` or `key: ~`) keeps the default.
	if isNull(n) {
		return
	}
	switch {
	case v.Kind() == reflect.Struct:
		d.structValue(n, v, key)
	case v.Kind() == reflect.Map:
		d.mapValue(n, v, key)
	case v.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.typeProblem(n, key, "a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.value(c, s.Index(i), fmt.Sprintf("%s[%d]", key, i))
		}
		v.Set(s)
	default:
		if n.Kind != yaml.ScalarNode {
			d.typeProblem(n, key, describe(v.Type()))
			return
		}
		d.scalar(n, v, key)
	}
}

func (d *decoder) structValue(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind != yaml.MappingNode {
		d.typeProblem(n, key, "a mapping")
		return
	}
	fields := map[string]int{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			fields[name] = i
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		path := join(key, k.Value)
		if seen[k.Value] {
			d.valueProblem(k, path, "set twice")
			continue
		}
		seen[k.Value] = true
		idx, ok := fields[k.Value]
		if !ok {
			names := make([]string, 0, len(fields))
			for name := range fields {
				names = append(names, name)
			}
			sort.Strings(names)
			d.valueProblem(k, path, "unknown key (known here: "+strings.Join(names, ", ")+")")
			continue
		}
		d.value(val, v.Field(idx), path)
	}
}

func (d *decoder) mapValue(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind != yaml.MappingNode {
		d.typeProblem(n, key, "a mapping")
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		path := join(key, k.Value)
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.valueProblem(k, path, "set twice")
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		d.value(val, elem, path)
		m.SetMapIndex(reflect.ValueOf(k.Value), elem)
	}
	v.Set(m)
}

func (d *decoder) scalar(n *yaml.Node, v reflect.Value, key string) {
	if v.Kind() == reflect.String {
		s, err := expandEnv(n.Value, d.lookupEnv)
		if err != nil {
			d.valueProblem(n, key, err.Error())
			return
		}
		v.SetString(s)
		return
	}
	// Only strings are secrets, so echoing other values is safe.
	s := n.Value
	switch {
	case v.Type() == durationType:
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.valueProblem(n, key, fmt.Sprintf("want a duration such as 1s or 500ms, got %q", s))
			return
		}
		v.SetInt(int64(dur))
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			d.valueProblem(n, key, fmt.Sprintf("want true or false, got %q", s))
			return
		}
		v.SetBool(b)
	case v.CanInt():
		i, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			d.valueProblem(n, key, fmt.Sprintf("want %s, got %q", describe(v.Type()), s))
			return
		}
		v.SetInt(i)
	case v.CanUint():
		u, err := strconv.ParseUint(s, 10, v.Type().Bits())
		if err != nil {
			d.valueProblem(n, key, fmt.Sprintf("want %s, got %q", describe(v.Type()), s))
			return
		}
		v.SetUint(u)
	case v.CanFloat():
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			d.valueProblem(n, key, fmt.Sprintf("want a number, got %q", s))
			return
		}
		v.SetFloat(f)
	default:
		// A field type this decoder does not know is a programming error.
		panic(fmt.Sprintf("config: no decoder for %s at %s", v.Type(), key))
	}
}

// describe names a Go type the way an operator thinks of it.
func describe(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 1s"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return fmt.Sprintf("an integer from %d to %d", -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1)
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<(t.Bits()-1)*2-1)
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	}
	return t.Kind().String()
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// expandEnv replaces ${NAME} with the environment variable NAME. An unset
// variable is an error, so a typo cannot silently become an empty password.
// "$${" stands for a literal "${"; any other "$" is kept as is, so passwords
// containing "$" need no escaping.
func expandEnv(s string, lookupEnv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			// s[:i] ends with the escaping '$', which becomes the literal one.
			b.WriteString(s[:i])
			b.WriteString("{")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ (write $${ for a literal ${)")
		}
		name := s[i+2 : i+end]
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s}: not a valid environment variable name", name)
		}
		val, ok := lookupEnv(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(val)
		s = s[i+end+1:]
	}
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}
