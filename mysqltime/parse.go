// Package mysqltime reads and writes MySQL's date and time values: the texts
// go-mysql and the SQL protocol produce, calendar arithmetic, and the texts
// MySQL prints. Pure functions on the hot path: no allocation, no
// time.Parse or time.Format, and MySQL's zero and invalid dates kept as
// they are for the caller to judge. It must not read the process's clock
// or time zone: a zone is always the caller's (nil meaning UTC).
package mysqltime

import "time"

// Hand-written parsers for the texts go-mysql produces for DATE, DATETIME,
// TIMESTAMP and TIME: time.Parse is several times slower, allocates on
// error, and rejects MySQL's zero and invalid dates, which must be seen as
// such.

func digits(s string, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for i := 0; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// ParseDate parses "YYYY-MM-DD" without validating the calendar.
func ParseDate(s string) (y, m, d int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	y, ok1 := digits(s, 4)
	m, ok2 := digits(s[5:], 2)
	d, ok3 := digits(s[8:], 2)
	return y, m, d, ok1 && ok2 && ok3
}

// Parts are a date and time's fields as written, unvalidated: a zero or
// invalid date stays what it is.
type Parts struct {
	Y, Mo, D, H, Mi, S, US int
}

// ParseDateTime parses "YYYY-MM-DD hh:mm:ss[.f...]" (1 to 6 fraction
// digits) without validating the calendar.
func ParseDateTime(s string) (p Parts, ok bool) {
	if len(s) < 19 || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return p, false
	}
	if p.Y, p.Mo, p.D, ok = ParseDate(s[:10]); !ok {
		return p, false
	}
	var ok1, ok2, ok3 bool
	p.H, ok1 = digits(s[11:], 2)
	p.Mi, ok2 = digits(s[14:], 2)
	p.S, ok3 = digits(s[17:], 2)
	if !ok1 || !ok2 || !ok3 {
		return p, false
	}
	if len(s) == 19 {
		return p, true
	}
	frac := s[20:]
	if s[19] != '.' || len(frac) == 0 || len(frac) > 6 {
		return p, false
	}
	f, ok := digits(frac, len(frac))
	if !ok {
		return p, false
	}
	for i := len(frac); i < 6; i++ {
		f *= 10
	}
	p.US = f
	return p, true
}

// Micros is the instant in microseconds since the epoch, the parts being
// wall clock in loc (nil: UTC).
func (p Parts) Micros(loc *time.Location) int64 {
	if loc == nil {
		secs := DaysFromCivil(p.Y, p.Mo, p.D)*86400 + int64(p.H*3600+p.Mi*60+p.S)
		return secs*1e6 + int64(p.US)
	}
	return time.Date(p.Y, time.Month(p.Mo), p.D, p.H, p.Mi, p.S, p.US*1000, loc).UnixMicro()
}

func ValidDate(y, m, d int) bool {
	if m < 1 || m > 12 || d < 1 {
		return false
	}
	days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// DaysFromCivil is the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (Howard Hinnant's algorithm).
func DaysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// ParseTimeMicros parses MySQL's TIME text, "[-]h...h:mm:ss[.f...]" (hours
// may exceed 24), into signed microseconds.
func ParseTimeMicros(s string) (int64, bool) {
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	i := 0
	h := int64(0)
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		h = h*10 + int64(s[i]-'0')
		i++
		if i > 4 {
			return 0, false
		}
	}
	if i == 0 || len(s) < i+6 || s[i] != ':' || s[i+3] != ':' {
		return 0, false
	}
	m, ok1 := digits(s[i+1:], 2)
	sec, ok2 := digits(s[i+4:], 2)
	if !ok1 || !ok2 || m > 59 || sec > 59 {
		return 0, false
	}
	us := int64(0)
	if rest := s[i+6:]; len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 7 {
			return 0, false
		}
		f, ok := digits(rest[1:], len(rest)-1)
		if !ok {
			return 0, false
		}
		for j := len(rest) - 1; j < 6; j++ {
			f *= 10
		}
		us = int64(f)
	}
	v := ((h*60+int64(m))*60+int64(sec))*1e6 + us
	if neg {
		v = -v
	}
	return v, true
}
