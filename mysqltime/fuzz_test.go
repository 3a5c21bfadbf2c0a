package mysqltime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func FuzzParseDateTime(f *testing.F) {
	for _, s := range []string{
		"2024-02-29 23:59:58", "2024-02-29 23:59:58.5", "9999-12-31 23:59:59.999999", "0000-00-00 00:00:00",
		"1970-01-01 00:00:00.000000", "2024-13-45 25:61:99.1", "2024-02-29 23:59:58.", "2024-02-29 23:59:58.1234567",
		"2024-02-29T23:59:58", "2024-02-29 23:59", "", "2024-02-29 23:59:58.5a", "1000-01-01 00:00:00.00001",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := ParseDateTime(s)
		if !ok {
			return
		}
		if len(s) < 19 || len(s) > 26 {
			t.Fatalf("ParseDateTime(%q) accepted %d bytes", s, len(s))
		}
		if p.Y < 0 || p.Y > 9999 || p.Mo < 0 || p.Mo > 99 || p.D < 0 || p.D > 99 ||
			p.H < 0 || p.H > 99 || p.Mi < 0 || p.Mi > 99 || p.S < 0 || p.S > 99 || p.US < 0 || p.US > 999999 {
			t.Fatalf("ParseDateTime(%q) = %+v: a part outside its digits' range", s, p)
		}
		// The parts are the text's digits: render them back.
		back := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", p.Y, p.Mo, p.D, p.H, p.Mi, p.S)
		if len(s) > 19 {
			back += "." + fmt.Sprintf("%06d", p.US)[:len(s)-20]
		}
		if back != s {
			t.Fatalf("ParseDateTime(%q) = %+v, which renders as %q", s, p, back)
		}
		if y, m, d, ok := ParseDate(s[:10]); !ok || y != p.Y || m != p.Mo || d != p.D {
			t.Fatalf("ParseDate(%q) = %d, %d, %d, %v; ParseDateTime says %+v", s[:10], y, m, d, ok, p)
		}
		us := p.Micros(nil)
		if ValidDate(p.Y, p.Mo, p.D) && p.H < 24 && p.Mi < 60 && p.S < 60 {
			if want := timeRefMicros(p, time.UTC); us != want {
				t.Fatalf("%q: micros(nil) = %d, time package says %d", s, us, want)
			}
		}
	})
}

func FuzzParseTimeMicros(f *testing.F) {
	for _, s := range []string{
		"-838:59:59", "838:59:59.000000", "-00:00:00.500", "123:45:06.789", "00:00:00", "9999:59:59.999999",
		"1:2:3", "12:60:00", "12:00:61", "--1:00:00", "12:00:00.", "12:00:00.1234567", "12345:00:00", "", "-",
	} {
		f.Add(s)
	}
	const limit = int64(10000) * 3600e6
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseTimeMicros(s)
		if !ok {
			if v != 0 {
				t.Fatalf("ParseTimeMicros(%q) = %d with a reject", s, v)
			}
			return
		}
		if v <= -limit || v >= limit {
			t.Fatalf("ParseTimeMicros(%q) = %d, |v| not below 10000 hours", s, v)
		}
		if v < 0 && !strings.HasPrefix(s, "-") {
			t.Fatalf("ParseTimeMicros(%q) = %d, negative without a sign", s, v)
		}
		if len(s) > 18 { // -hhhh:mm:ss.ffffff
			t.Fatalf("ParseTimeMicros(%q) accepted %d bytes", s, len(s))
		}
	})
}
