package mysqltime

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York without depending on the host's zoneinfo
)

func TestParseDate(t *testing.T) {
	good := []struct {
		in      string
		y, m, d int
	}{
		{"2024-02-29", 2024, 2, 29},
		{"0000-00-00", 0, 0, 0},
		{"9999-12-31", 9999, 12, 31},
		{"1000-01-01", 1000, 1, 1},
		// The calendar is not validated here.
		{"2024-00-10", 2024, 0, 10},
		{"2023-02-30", 2023, 2, 30},
		{"2024-99-99", 2024, 99, 99},
	}
	for _, c := range good {
		y, m, d, ok := ParseDate(c.in)
		if !ok || y != c.y || m != c.m || d != c.d {
			t.Errorf("ParseDate(%q) = %d, %d, %d, %v; want %d, %d, %d, true", c.in, y, m, d, ok, c.y, c.m, c.d)
		}
	}
	bad := []string{
		"", "2024", "2024-02", "2024-2-29", "2024-02-9", "24-02-29", "20240-02-29", "2024-02-290",
		"2024-02-29 ", " 2024-02-29", "2024/02/29", "2024-02/29", "2024_02-29", "20240229xx",
		"2O24-02-29", "2024-0a-29", "2024-02-2x", "+024-02-29", "-024-02-29", "2024-+2-29", "2024-02--9",
		"2024-02-29 00:00:00",
	}
	for _, s := range bad {
		if y, m, d, ok := ParseDate(s); ok {
			t.Errorf("ParseDate(%q) = %d, %d, %d, true; want a reject", s, y, m, d)
		}
	}
}

func TestParseDateTime(t *testing.T) {
	good := []struct {
		in   string
		want Parts
	}{
		{"2024-02-29 23:59:58", Parts{2024, 2, 29, 23, 59, 58, 0}},
		{"0000-00-00 00:00:00", Parts{}},
		{"9999-12-31 23:59:59.999999", Parts{9999, 12, 31, 23, 59, 59, 999999}},
		{"2024-02-29 12:34:56.5", Parts{2024, 2, 29, 12, 34, 56, 500000}},
		{"2024-02-29 12:34:56.12", Parts{2024, 2, 29, 12, 34, 56, 120000}},
		{"2024-02-29 12:34:56.123", Parts{2024, 2, 29, 12, 34, 56, 123000}},
		{"2024-02-29 12:34:56.1234", Parts{2024, 2, 29, 12, 34, 56, 123400}},
		{"2024-02-29 12:34:56.12345", Parts{2024, 2, 29, 12, 34, 56, 123450}},
		{"2024-02-29 12:34:56.123456", Parts{2024, 2, 29, 12, 34, 56, 123456}},
		{"2024-02-29 12:34:56.000001", Parts{2024, 2, 29, 12, 34, 56, 1}},
		{"2024-02-29 12:34:56.000000", Parts{2024, 2, 29, 12, 34, 56, 0}},
		{"1970-01-01 00:00:00.0", Parts{1970, 1, 1, 0, 0, 0, 0}},
		// Neither the calendar nor the clock is validated here.
		{"2024-13-45 25:61:99", Parts{2024, 13, 45, 25, 61, 99, 0}},
	}
	for _, c := range good {
		p, ok := ParseDateTime(c.in)
		if !ok || p != c.want {
			t.Errorf("ParseDateTime(%q) = %+v, %v; want %+v, true", c.in, p, ok, c.want)
		}
	}
	bad := []string{
		"",
		"2024-02-29",
		"2024-02-29 ",
		"2024-02-29 23:59",
		"2024-02-29 23:59:5",          // 18 bytes
		"2024-02-29 23:59:58.",        // empty fraction
		"2024-02-29 23:59:58.1234567", // 7 fraction digits
		"2024-02-29 23:59:58.12345678",
		"2024-02-29 23:59:58,5",  // bad fraction separator
		"2024-02-29 23:59:58 5",  // bad fraction separator
		"2024-02-29 23:59:585",   // digit where the point goes
		"2024-02-29 23:59:58.5a", // letter in the fraction
		"2024-02-29 23:59:58.a",
		"2024-02-29 23:59:58.-1",
		"2024-02-29 23:59:58Z",
		"2024-02-29T23:59:58",  // bad date/time separator
		"2024-02-29 23-59-58",  // bad time separators
		"2024-02-29 23:59-58",  // bad time separator
		"2024-02-29 23.59:58",  // bad time separator
		"2024/02/29 23:59:58",  // bad date separators
		"2024-02-2x 23:59:58",  // letter in the date
		"2024-02-29 2x:59:58",  // letter in the hour
		"2024-02-29 23:5x:58",  // letter in the minute
		"2024-02-29 23:59:x8",  // letter in the second
		"2024-02-29 +3:59:58",  // sign in the hour
		"2024-02-29 23:59:-8",  // sign in the second
		" 2024-02-29 23:59:58", // leading space
		"2024-2-29 23:59:58.1", // short month, same total length as a valid value
		"2024-02-29  23:59:58",
	}
	for _, s := range bad {
		if p, ok := ParseDateTime(s); ok {
			t.Errorf("ParseDateTime(%q) = %+v, true; want a reject", s, p)
		}
	}
}

func TestValidDate(t *testing.T) {
	cases := []struct {
		y, m, d int
		want    bool
	}{
		{2024, 2, 29, true}, {2023, 2, 29, false}, {2023, 2, 28, true},
		{1900, 2, 29, false}, {2000, 2, 29, true}, {2100, 2, 29, false}, {2400, 2, 29, true},
		{0, 2, 29, true}, // year 0 is a leap year in the proleptic Gregorian calendar
		{2024, 1, 31, true}, {2024, 1, 32, false}, {2024, 4, 30, true}, {2024, 4, 31, false},
		{2024, 6, 31, false}, {2024, 9, 31, false}, {2024, 11, 31, false}, {2024, 12, 31, true},
		{2024, 0, 10, false}, {2024, 13, 1, false}, {2024, 1, 0, false}, {2024, -1, 1, false}, {2024, 1, -1, false},
		{0, 0, 0, false}, {9999, 12, 31, true}, {2024, 2, 30, false},
	}
	for _, c := range cases {
		if got := ValidDate(c.y, c.m, c.d); got != c.want {
			t.Errorf("ValidDate(%d, %d, %d) = %v, want %v", c.y, c.m, c.d, got, c.want)
		}
	}
	// Against the time package, which normalizes an invalid date into
	// another one: over four centuries, every month, days 0..32.
	for y := 1600; y < 2000; y++ {
		for m := 1; m <= 12; m++ {
			for d := 0; d <= 32; d++ {
				tt := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
				want := tt.Year() == y && int(tt.Month()) == m && tt.Day() == d
				if got := ValidDate(y, m, d); got != want {
					t.Fatalf("ValidDate(%d, %d, %d) = %v, want %v", y, m, d, got, want)
				}
			}
		}
	}
}

func TestDaysFromCivil(t *testing.T) {
	fixed := []struct {
		y, m, d int
		want    int64
	}{
		{1970, 1, 1, 0},
		{1970, 1, 2, 1},
		{1969, 12, 31, -1},
		{2000, 3, 1, 11017},
		{2105, 12, 31, 49672},  // the last Date of ClickHouse before 20.x
		{2149, 6, 6, 65535},    // the last Date
		{1900, 1, 1, -25567},   // the first Date32
		{2299, 12, 31, 120529}, // the last Date32
		{1, 1, 1, -719162},
		{0, 3, 1, -719468},
		{9999, 12, 31, 2932896},
	}
	for _, c := range fixed {
		if got := DaysFromCivil(c.y, c.m, c.d); got != c.want {
			t.Errorf("DaysFromCivil(%d, %d, %d) = %d, want %d", c.y, c.m, c.d, got, c.want)
		}
	}
	// Every valid date of years -400..9999 against the time package, and
	// against the previous day (consecutive dates are consecutive numbers).
	prev := DaysFromCivil(-401, 12, 31)
	for y := -400; y <= 9999; y++ {
		for m := 1; m <= 12; m++ {
			for d := 1; ValidDate(y, m, d); d++ {
				got := DaysFromCivil(y, m, d)
				if got != prev+1 {
					t.Fatalf("DaysFromCivil(%d, %d, %d) = %d, want %d (the day before + 1)", y, m, d, got, prev+1)
				}
				prev = got
				if want := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400; got != want {
					t.Fatalf("DaysFromCivil(%d, %d, %d) = %d, time package says %d", y, m, d, got, want)
				}
			}
		}
	}
	// Unix()/86400 truncates toward zero, but midnights are whole days, so
	// the division is exact before 1970 too.
	for _, c := range [][3]int{{1900, 2, 28}, {1900, 3, 1}, {2000, 2, 29}, {2000, 3, 1}, {1600, 2, 29}, {1, 1, 1}, {0, 1, 1}, {-1, 12, 31}, {-400, 1, 1}} {
		want := time.Date(c[0], time.Month(c[1]), c[2], 0, 0, 0, 0, time.UTC).Unix() / 86400
		if got := DaysFromCivil(c[0], c[1], c[2]); got != want {
			t.Errorf("DaysFromCivil(%d, %d, %d) = %d, want %d", c[0], c[1], c[2], got, want)
		}
	}
}

// timeRefMicros is p as UTC wall clock, by the time package.
func timeRefMicros(p Parts, loc *time.Location) int64 {
	return time.Date(p.Y, time.Month(p.Mo), p.D, p.H, p.Mi, p.S, p.US*1000, loc).UnixMicro()
}

func TestMicrosUTC(t *testing.T) {
	fixed := []struct {
		p    Parts
		want int64
	}{
		{Parts{1970, 1, 1, 0, 0, 0, 0}, 0},
		{Parts{1970, 1, 1, 0, 0, 0, 1}, 1},
		{Parts{1969, 12, 31, 23, 59, 59, 999999}, -1},
		{Parts{2038, 1, 19, 3, 14, 7, 999000}, 2147483647999000},
		{Parts{2299, 12, 31, 23, 59, 59, 999999}, (10413792000-1)*1e6 + 999999}, // the last DateTime64
		{Parts{1900, 1, 1, 0, 0, 0, 0}, -2208988800 * 1e6},                      // the first DateTime64
		{Parts{2106, 2, 7, 6, 28, 15, 999999}, int64(4294967295)*1e6 + 999999},
	}
	for _, c := range fixed {
		if got := c.p.Micros(nil); got != c.want {
			t.Errorf("%+v.Micros(nil) = %d, want %d", c.p, got, c.want)
		}
		if got := c.p.Micros(time.UTC); got != c.want {
			t.Errorf("%+v.Micros(UTC) = %d, want %d", c.p, got, c.want)
		}
	}
	// Month and day edges of every year 1..9999, at random times of day.
	r := rand.New(rand.NewPCG(1, 2))
	for y := 1; y <= 9999; y++ {
		for m := 1; m <= 12; m++ {
			for _, d := range []int{1, 28, 29, 30, 31} {
				if !ValidDate(y, m, d) {
					continue
				}
				p := Parts{y, m, d, r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000000)}
				if got, want := p.Micros(nil), timeRefMicros(p, time.UTC); got != want {
					t.Fatalf("%+v.Micros(nil) = %d, time package says %d", p, got, want)
				}
			}
		}
	}
	// The day's last and first microseconds around leap days.
	for _, y := range []int{1900, 2000, 2024, 2100, 2400, 9996} {
		for _, p := range []Parts{
			{y, 2, 28, 23, 59, 59, 999999}, {y, 3, 1, 0, 0, 0, 0}, {y, 12, 31, 23, 59, 59, 999999}, {y, 1, 1, 0, 0, 0, 0},
		} {
			if got, want := p.Micros(nil), timeRefMicros(p, time.UTC); got != want {
				t.Errorf("%+v.Micros(nil) = %d, time package says %d", p, got, want)
			}
		}
	}
}

func TestMicrosInZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(y, mo, d, h, mi, s int) int64 {
		return time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC).UnixMicro()
	}
	fixed := []struct {
		p    Parts
		want int64
	}{
		{Parts{2024, 1, 15, 12, 0, 0, 0}, utc(2024, 1, 15, 17, 0, 0)},                 // EST, UTC-5
		{Parts{2024, 7, 1, 12, 0, 0, 250000}, utc(2024, 7, 1, 16, 0, 0) + 250000},     // EDT, UTC-4
		{Parts{2024, 3, 10, 1, 59, 59, 999999}, utc(2024, 3, 10, 6, 59, 59) + 999999}, // just before the gap
		{Parts{2024, 3, 10, 3, 0, 0, 0}, utc(2024, 3, 10, 7, 0, 0)},                   // just after the gap
		{Parts{2024, 11, 3, 2, 0, 0, 0}, utc(2024, 11, 3, 7, 0, 0)},                   // just after the overlap
		{Parts{1970, 1, 1, 0, 0, 0, 0}, 5 * 3600 * 1e6},
	}
	for _, c := range fixed {
		if got := c.p.Micros(ny); got != c.want {
			t.Errorf("%+v.Micros(New York) = %d, want %d", c.p, got, c.want)
		}
		if c.p.Micros(nil) == c.want {
			t.Errorf("%+v.Micros(nil) = %d, the New York instant: the zone was ignored", c.p, c.want)
		}
	}
	// In the spring-forward gap (02:30 does not exist) and the fall-back
	// overlap (01:30 happens twice) the result is whatever time.Date picks,
	// which must be one of the two readings of the wall clock.
	for _, c := range []struct {
		p      Parts
		a, b   int64
		reason string
	}{
		{Parts{2024, 3, 10, 2, 30, 0, 0}, utc(2024, 3, 10, 7, 30, 0), utc(2024, 3, 10, 6, 30, 0), "gap"},
		{Parts{2024, 11, 3, 1, 30, 0, 123}, utc(2024, 11, 3, 5, 30, 0) + 123, utc(2024, 11, 3, 6, 30, 0) + 123, "overlap"},
	} {
		got := c.p.Micros(ny)
		if want := timeRefMicros(c.p, ny); got != want {
			t.Errorf("%s: %+v.Micros(New York) = %d, time.Date says %d", c.reason, c.p, got, want)
		}
		if got != c.a && got != c.b {
			t.Errorf("%s: %+v.Micros(New York) = %d, want %d or %d", c.reason, c.p, got, c.a, c.b)
		}
	}
	// A spread of instants across years and seasons.
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		p := Parts{1 + r.IntN(9999), 1 + r.IntN(12), 1 + r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000000)}
		if got, want := p.Micros(ny), timeRefMicros(p, ny); got != want {
			t.Fatalf("%+v.Micros(New York) = %d, time.Date says %d", p, got, want)
		}
	}
}

func TestParseTimeMicros(t *testing.T) {
	const s, h = int64(1e6), int64(3600e6)
	good := []struct {
		in   string
		want int64
	}{
		{"-838:59:59", -(838*h + 59*60*s + 59*s)},
		{"838:59:59", 838*h + 59*60*s + 59*s},
		{"838:59:59.000000", 838*h + 59*60*s + 59*s},
		{"-838:59:58.123", -(838*h + 59*60*s + 58*s + 123000)},
		{"-00:00:00.500", -500000},
		{"-00:00:00", 0},
		{"123:45:06.789", 123*h + 45*60*s + 6*s + 789000},
		{"00:00:00", 0},
		{"0:00:01", s},
		{"12:34:56", 12*h + 34*60*s + 56*s},
		{"12:00:00.1", 12*h + 100000},
		{"12:00:00.000001", 12*h + 1},
		{"12:00:00.999999", 12*h + 999999},
		{"9999:59:59.999999", 9999*h + 59*60*s + 59*s + 999999},
		{"0000:00:00", 0},
		{"-1:00:00", -h},
	}
	for _, c := range good {
		if got, ok := ParseTimeMicros(c.in); !ok || got != c.want {
			t.Errorf("ParseTimeMicros(%q) = %d, %v; want %d, true", c.in, got, ok, c.want)
		}
	}
	bad := []string{
		"", "-", "--", ":", "::", ":00:00", "-:00:00",
		"1:2:3", "12:0:00", "12:00:0", "12:00",
		"12:60:00", "12:00:60", "12:00:61", "12:99:00",
		"--1:00:00", "+1:00:00", " 1:00:00", "1 :00:00",
		"12:00:00.", "12:00:00.1234567", "12:00:00..1", "12:00:00.1a", "12:00:00.a", "12:00:00.-1",
		"12:00:00,5", "12:00:00 ", "12:00:00x", "12:00:001",
		"12345:00:00", "99999:00:00", "-12345:00:00",
		"12-00-00", "12:00-00", "12:0a:00", "12:00:0a", "a12:00:00", "1a:00:00",
		"2024-02-29 12:00:00",
	}
	for _, in := range bad {
		if got, ok := ParseTimeMicros(in); ok {
			t.Errorf("ParseTimeMicros(%q) = %d, true; want a reject", in, got)
		}
	}
}

// TestParseTimeMicrosRoundTrip renders microsecond values as MySQL does and
// parses them back.
func TestParseTimeMicrosRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const limit = int64(10000)*3600e6 - 1
	for i := 0; i < 20000; i++ {
		v := r.Int64N(2*limit+1) - limit
		a := v
		sign := ""
		if a < 0 {
			sign, a = "-", -a
		}
		us := a % 1e6
		sec := a / 1e6
		text := fmt.Sprintf("%s%02d:%02d:%02d", sign, sec/3600, sec/60%60, sec%60)
		if us != 0 || i%2 == 0 {
			text += fmt.Sprintf(".%06d", us)
		}
		if got, ok := ParseTimeMicros(text); !ok || got != v {
			t.Fatalf("ParseTimeMicros(%q) = %d, %v; want %d, true", text, got, ok, v)
		}
	}
}
