package block

import (
	"math"
	"time"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/mysqltime"
	"github.com/binlog2ch/binlog2ch/schema"
)

// Ranges of the ClickHouse date types.
const (
	dateMaxDays   = 65535  // Date: 2149-06-06
	legacyMaxDays = 49672  // 2105-12-31, see Capabilities.LegacyDateRange
	date32MinDays = -25567 // Date32: 1900-01-01
	date32MaxDays = 120529 // Date32: 2299-12-31
	dt64MinMicros = -2208988800 * 1e6
	dt64MaxMicros = (10413792000-1)*1e6 + 999999 // 2299-12-31 23:59:59.999999
	dayMicros     = column.DayMicros
)

// fix applies the invalid_dates policy to a value that cannot be written as
// is. It returns the replacement (the bound clampTo) or null=true.
func (b *Block) fix(kind Fixup, nullable bool, clampTo int64) (v int64, null bool, err error) {
	switch b.target.Options.InvalidDates {
	case schema.InvalidClamp:
	case schema.InvalidNull:
		if nullable {
			b.pending[kind]++
			return 0, true, nil
		}
	default:
		msg := map[Fixup]string{
			FixupZeroDate:       "zero date",
			FixupInvalidDate:    "invalid date",
			FixupDateOutOfRange: "date outside the ClickHouse type's range",
		}[kind]
		return 0, false, errMsg(msg + "; set schema.invalid_dates to clamp or null to write it anyway")
	}
	b.pending[kind]++
	return clampTo, false, nil
}

func (b *Block) dateConverter(c *schema.Column, t schema.CHType, nl column.Nulls) (column.Buf, converter) {
	lo, hi := b.dateBounds(t)
	buf := &column.Time{Num: column.Num[int64]{Nulls: nl}}
	return buf, func(v any) error {
		switch d := v.(type) {
		case string:
			y, m, dd, ok := mysqltime.ParseDate(d)
			if !ok {
				return errMsg("not a DATE value")
			}
			return b.putDate(buf, lo, hi, y, m, dd)
		case time.Time:
			return b.putDays(buf, lo, hi, mysqltime.DaysFromCivil(d.Year(), int(d.Month()), d.Day()), -1)
		}
		return errMsg("want a DATE string")
	}
}

// dateBounds is the range of a Date/Date32 column in days since 1970.
func (b *Block) dateBounds(t schema.CHType) (lo, hi int64) {
	lo, hi = 0, dateMaxDays
	if b.target.Caps.LegacyDateRange {
		hi = legacyMaxDays
	}
	if t.Kind == schema.CHDate32 {
		lo, hi = date32MinDays, date32MaxDays
	}
	return lo, hi
}

// putDate appends a DATE given as its parts, which may be zero or invalid.
func (b *Block) putDate(buf *column.Time, lo, hi int64, y, m, d int) error {
	switch {
	case y == 0 && m == 0 && d == 0:
		return b.putDays(buf, lo, hi, 0, FixupZeroDate)
	case !mysqltime.ValidDate(y, m, d):
		return b.putDays(buf, lo, hi, 0, FixupInvalidDate)
	}
	return b.putDays(buf, lo, hi, mysqltime.DaysFromCivil(y, m, d), -1)
}

// putDays appends a date, applying the invalid_dates policy to a value of
// fix-up kind `kind` (-1: none) or outside lo..hi.
func (b *Block) putDays(buf *column.Time, lo, hi, days int64, kind Fixup) error {
	clampTo := lo
	if kind < 0 && (days < lo || days > hi) {
		kind = FixupDateOutOfRange
		if days > hi {
			clampTo = hi
		}
	}
	if kind >= 0 {
		fixed, null, err := b.fix(kind, buf.Nullable, clampTo)
		if err != nil {
			return err
		}
		if null {
			buf.AppendNull()
			return nil
		}
		days = fixed
	}
	buf.Add(days * dayMicros)
	return nil
}

// dateTimeConverter writes DATETIME and TIMESTAMP as DateTime (seconds) or
// DateTime64 (microseconds). TIMESTAMP strings are taken as UTC (binlog2ch
// sets go-mysql's TimestampStringLocation to UTC); DATETIME values are wall
// clock in the configured zone.
func (b *Block) dateTimeConverter(c *schema.Column, t schema.CHType, nl column.Nulls) (column.Buf, converter) {
	dt := b.newDateTimeBuf(c, t, nl)
	b.dateTimeBufs[c] = dt
	wallClock := c.Kind == schema.KindDateTime
	return dt.buf, func(v any) error {
		switch d := v.(type) {
		case string:
			p, ok := mysqltime.ParseDateTime(d)
			if !ok {
				return errMsg("not a DATETIME value")
			}
			return dt.putParts(p)
		case time.Time:
			if wallClock && dt.loc != nil {
				d = time.Date(d.Year(), d.Month(), d.Day(), d.Hour(), d.Minute(), d.Second(), d.Nanosecond(), dt.loc)
			}
			return dt.put(d.UnixMicro(), -1)
		}
		return errMsg("want a DATETIME string or time.Time")
	}
}

// dateTimeBuf is a DateTime or DateTime64 column with its range and zone.
type dateTimeBuf struct {
	b      *Block
	buf    column.Buf
	add    func(us int64)
	lo, hi int64
	loc    *time.Location // zone of wall-clock values; nil: UTC
}

func (b *Block) newDateTimeBuf(c *schema.Column, t schema.CHType, nl column.Nulls) *dateTimeBuf {
	dt := &dateTimeBuf{b: b, loc: b.target.Options.DateTimeZone, lo: 0, hi: int64(math.MaxUint32)*1e6 + 999999}
	if c.Kind == schema.KindTimestamp || dt.loc == time.UTC {
		dt.loc = nil // nil: UTC arithmetic, no zone lookups
	}
	if b.target.Caps.LegacyDateRange {
		dt.hi = (legacyMaxDays+1)*dayMicros - 1
	}
	if t.Kind == schema.CHDateTime64 {
		dt.lo, dt.hi = dt64MinMicros, dt64MaxMicros
		tb := &column.Time{Num: column.Num[int64]{Nulls: nl}}
		dt.buf, dt.add = tb, tb.Add
	} else {
		nb := &column.Num[int64]{Nulls: nl}
		dt.buf, dt.add = nb, func(us int64) { nb.Add(us / 1e6) }
	}
	return dt
}

// putParts appends a DATETIME given as its parts, wall clock in dt.loc.
func (dt *dateTimeBuf) putParts(p mysqltime.Parts) error {
	switch {
	case p.Y == 0 && p.Mo == 0 && p.D == 0:
		return dt.put(0, FixupZeroDate)
	case !mysqltime.ValidDate(p.Y, p.Mo, p.D) || p.H > 23 || p.Mi > 59 || p.S > 59:
		return dt.put(0, FixupInvalidDate)
	}
	return dt.put(p.Micros(dt.loc), -1)
}

// put appends an instant in microseconds, applying the invalid_dates
// policy to a value of fix-up kind `kind` (-1: none) or out of range.
func (dt *dateTimeBuf) put(us int64, kind Fixup) error {
	clampTo := dt.lo
	if kind < 0 && (us < dt.lo || us > dt.hi) {
		kind = FixupDateOutOfRange
		if us > dt.hi {
			clampTo = dt.hi
		}
	}
	if kind >= 0 {
		fixed, null, err := dt.b.fix(kind, dt.buf.(interface{ IsNullable() bool }).IsNullable(), clampTo)
		if err != nil {
			return err
		}
		if null {
			dt.buf.AppendNull()
			return nil
		}
		us = fixed
	}
	dt.add(us)
	return nil
}

// dateTimeTextConverter keeps DATETIME(fsp)/TIMESTAMP(fsp) as text where the
// server has no DateTime64: "YYYY-MM-DD hh:mm:ss.ffffff" with fsp digits,
// TIMESTAMP in UTC. Zero dates stay as MySQL prints them.
func dateTimeTextConverter(c *schema.Column, nl column.Nulls) (column.Buf, converter) {
	buf := &column.Str{Nulls: nl}
	fsp := c.Fsp
	return buf, func(v any) error {
		switch d := v.(type) {
		case string:
			if _, ok := mysqltime.ParseDateTime(d); !ok {
				return errMsg("not a DATETIME value")
			}
			buf.Arena = mysqltime.AppendFraction(buf.Arena, d, fsp)
		case time.Time:
			if c.Kind == schema.KindTimestamp {
				d = d.UTC()
			}
			buf.Arena = mysqltime.AppendDateTime(buf.Arena, d, fsp)
		default:
			return errMsg("want a DATETIME string or time.Time")
		}
		buf.End()
		return nil
	}
}
