package mysqltime

import (
	"strconv"
	"time"
)

// AppendTime renders signed microseconds as MySQL prints TIME(fsp).
func AppendTime(dst []byte, us int64, fsp int) []byte {
	if us < 0 {
		dst = append(dst, '-')
		us = -us
	}
	secs := us / 1e6
	dst = AppendInt(dst, int(secs/3600), 2)
	dst = append(dst, ':')
	dst = AppendInt(dst, int(secs/60%60), 2)
	dst = append(dst, ':')
	dst = AppendInt(dst, int(secs%60), 2)
	return AppendFracDigits(dst, int(us%1e6), fsp)
}

// AppendFracDigits appends ".ffffff" cut to fsp digits (nothing for fsp 0).
func AppendFracDigits(dst []byte, us, fsp int) []byte {
	if fsp == 0 {
		return dst
	}
	var digits [6]byte
	for i := 5; i >= 0; i-- {
		digits[i] = byte('0' + us%10)
		us /= 10
	}
	dst = append(dst, '.')
	return append(dst, digits[:fsp]...)
}

// AppendParts renders "YYYY-MM-DD hh:mm:ss[.f]" from parts, zero dates
// included.
func AppendParts(dst []byte, p Parts, fsp int) []byte {
	dst = AppendInt(dst, p.Y, 4)
	dst = append(dst, '-')
	dst = AppendInt(dst, p.Mo, 2)
	dst = append(dst, '-')
	dst = AppendInt(dst, p.D, 2)
	dst = append(dst, ' ')
	dst = AppendInt(dst, p.H, 2)
	dst = append(dst, ':')
	dst = AppendInt(dst, p.Mi, 2)
	dst = append(dst, ':')
	dst = AppendInt(dst, p.S, 2)
	return AppendFracDigits(dst, p.US, fsp)
}

// PartsFromUnix splits seconds since the epoch into UTC parts.
func PartsFromUnix(unix int64, us int) Parts {
	days, secs := unix/86400, unix%86400
	y, m, d := CivilFromDays(days)
	return Parts{Y: y, Mo: m, D: d, H: int(secs / 3600), Mi: int(secs / 60 % 60), S: int(secs % 60), US: us}
}

// CivilFromDays is the inverse of DaysFromCivil (Howard Hinnant's
// algorithm).
func CivilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	yy := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp + 3)
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		yy++
	}
	return int(yy), m, d
}

// AppendFraction appends a datetime text with exactly fsp fraction digits.
func AppendFraction(dst []byte, s string, fsp int) []byte {
	base, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			base, frac = s[:i], s[i+1:]
			break
		}
	}
	dst = append(dst, base...)
	if fsp == 0 {
		return dst
	}
	dst = append(dst, '.')
	for i := 0; i < fsp; i++ {
		if i < len(frac) {
			dst = append(dst, frac[i])
		} else {
			dst = append(dst, '0')
		}
	}
	return dst
}

func AppendDateTime(dst []byte, t time.Time, fsp int) []byte {
	dst = AppendInt(dst, t.Year(), 4)
	dst = append(dst, '-')
	dst = AppendInt(dst, int(t.Month()), 2)
	dst = append(dst, '-')
	dst = AppendInt(dst, t.Day(), 2)
	dst = append(dst, ' ')
	dst = AppendInt(dst, t.Hour(), 2)
	dst = append(dst, ':')
	dst = AppendInt(dst, t.Minute(), 2)
	dst = append(dst, ':')
	dst = AppendInt(dst, t.Second(), 2)
	if fsp > 0 {
		dst = append(dst, '.')
		us := t.Nanosecond() / 1000
		var digits [6]byte
		for i := 5; i >= 0; i-- {
			digits[i] = byte('0' + us%10)
			us /= 10
		}
		dst = append(dst, digits[:fsp]...)
	}
	return dst
}

// AppendInt appends v in decimal, zero-padded to width digits.
func AppendInt(dst []byte, v, width int) []byte {
	// The common cases, the parts of a date or time, without strconv.
	switch {
	case width == 2 && v >= 0 && v < 100:
		return append(dst, byte('0'+v/10), byte('0'+v%10))
	case width <= 3 && v >= 100 && v < 1000: // a TIME's hours past 99
		return append(dst, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	case width == 4 && v >= 0 && v < 10000:
		return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}
