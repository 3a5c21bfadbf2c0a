package schema

import (
	"reflect"
	"strings"
	"testing"
)

// fuzzQuoteLabels renders labels as information_schema's COLUMN_TYPE lists them.
func fuzzQuoteLabels(labels []string) string {
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\'')
		b.WriteString(strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(l))
		b.WriteByte('\'')
	}
	return b.String()
}

func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{
		`'a,b','it''s','x\\y','é'`, `''`, `'',''`, `''''`, `'a\nb'`, `'a`, `a,b`, `'a'b`, `'a\'`, `'a\`,
		`'a', 'b' ,'c'`, "", `'\0\t\r\Z'`, `'a)','(b'`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		labels, err := ParseLabels(s)
		if err != nil {
			if labels != nil {
				t.Fatalf("ParseLabels(%q) = %q with error %v", s, labels, err)
			}
			return
		}
		// Quoting the labels again gives a list that parses to the same.
		q := fuzzQuoteLabels(labels)
		again, err := ParseLabels(q)
		if err != nil || len(again) != len(labels) || (len(labels) > 0 && !reflect.DeepEqual(again, labels)) {
			t.Fatalf("ParseLabels(%q) = %q; requoted as %q it parses to %q, %v", s, labels, q, again, err)
		}
	})
}
