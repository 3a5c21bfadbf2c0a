// Package loadgen generates rows for binlog_field_test, the 30-column table
// of Bifrost's performance test, with varied values across each column's
// range. It must not import the daemon's packages (only the root
// package's fixture): it writes to MySQL as any client does, so what a
// benchmark measures is the daemon.
//
// Integers, strings, blobs, decimals, TIME, YEAR, ENUM and SET values span
// MySQL's whole range. Dates and times are kept, by default, inside the
// narrowest ClickHouse type binlog2ch may map them to, so the daemon's
// default schema.invalid_dates (error) replicates every generated row:
//
//   - DATE: 1971-01-01 .. 2105-12-28 (ClickHouse's Date; before 20.1
//     values after 2105-12-31 wrap around; Date32 is wider). Not 1970:
//     18.16 shows day 0, 1970-01-01, as 0000-00-00, which reads as a zero
//     date to anyone comparing by eye or by text.
//   - DATETIME: 1971-01-01 .. 2105-12-28 23:59:59 wall clock, which is
//     inside DateTime's 1970-01-01 00:00:00 .. 2105-12-31 23:59:59 UTC in
//     any schema.datetime_zone (UTC-12 to UTC+14).
//   - TIMESTAMP: 1971 .. 2037 in the session zone, which loadgen sets to
//     UTC (SessionSetup); MySQL's own range is narrower than DateTime's.
//
// WithFullRange (the -full-range flag) writes DATE and DATETIME values
// from year 1000 to 9999 instead, MySQL's whole range, to exercise
// schema.invalid_dates.
package loadgen

import (
	"math/rand/v2"
	"strconv"
)

// FieldTestColumns are binlog_field_test's columns after id, in the order
// FieldTestGen writes their values.
var FieldTestColumns = []string{
	"testtinyint", "testsmallint", "testmediumint", "testint", "testbigint",
	"testvarchar", "testchar", "testenum", "testset", "testtime", "testdate",
	"testyear", "testtimestamp", "testdatetime", "testfloat", "testdouble",
	"testdecimal", "testtext", "testblob", "testbit", "testbool",
	"testmediumblob", "testlongblob", "testtinyblob",
	"test_unsinged_tinyint", "test_unsinged_smallint", "test_unsinged_mediumint",
	"test_unsinged_int", "test_unsinged_bigint",
}

// FieldTestGen builds multi-row INSERT statements for binlog_field_test.
// Values are SQL literals valid in any sql_mode and time zone-independent
// (the statement's TIMESTAMP values assume the session time zone is UTC;
// see SessionSetup). It is not safe for concurrent use: give each
// connection its own.
type FieldTestGen struct {
	rnd    *rand.Rand
	buf    []byte
	maxLen int // cap on variable lengths; 0: none
	extra  int // extra_1..extra_N columns, see WithExtraColumns
	// Years of DATE and DATETIME values (see the package comment).
	dateFrom, dateTo         int
	dateTimeFrom, dateTimeTo int
}

// Years of the generated dates; see the package comment.
const (
	// DATE: ClickHouse's Date (1970-01-01 .. 2105-12-31 on 18.16) without
	// its first year, with day 28 at most.
	defaultDateFrom, defaultDateTo = 1971, 2105
	// DATETIME: a day inside DateTime's range at either end, for any
	// datetime_zone.
	defaultDateTimeFrom, defaultDateTimeTo = 1971, 2105
	// TIMESTAMP: inside MySQL's 1970-01-01 00:00:01 .. 2038-01-19
	// 03:14:07 UTC, itself inside DateTime's.
	timestampFrom, timestampTo = 1971, 2037
	// MySQL's DATE and DATETIME range, for WithFullRange.
	mysqlFrom, mysqlTo = 1000, 9999
)

// WithFullRange makes DATE and DATETIME values span MySQL's whole range,
// years 1000 to 9999, most of it outside ClickHouse's Date and DateTime
// (and outside Date32 and DateTime64, 1900 .. 2299): the daemon then stops
// at the first row under the default schema.invalid_dates, or clamps or
// nulls the values as configured. on=false restores the default ranges.
func (g *FieldTestGen) WithFullRange(on bool) *FieldTestGen {
	if on {
		g.dateFrom, g.dateTo, g.dateTimeFrom, g.dateTimeTo = mysqlFrom, mysqlTo, mysqlFrom, mysqlTo
	} else {
		g.dateFrom, g.dateTo, g.dateTimeFrom, g.dateTimeTo = defaultDateFrom, defaultDateTo, defaultDateTimeFrom, defaultDateTimeTo
	}
	return g
}

// WithExtraColumns adds n nullable VARCHAR(64) columns, extra_1..extra_n,
// to every row (a wider table, like the CrateDB ingest bench's extra
// tags); about one value in ten is NULL.
func (g *FieldTestGen) WithExtraColumns(n int) *FieldTestGen {
	g.extra = n
	return g
}

// ExtraColumnDDL is the definition of extra column i (1-based).
func ExtraColumnDDL(i int) string {
	return "`extra_" + strconv.Itoa(i) + "` VARCHAR(64) NULL"
}

// Compact caps every string and blob at n bytes (characters), for rows the
// size of Bifrost's insertDataTest rows (about 140 binlog bytes with n=8),
// which its published rows/minute figures are measured with.
func (g *FieldTestGen) Compact(n int) *FieldTestGen {
	g.maxLen = n
	return g
}

// SessionSetup is the statement a connection runs before using the
// generated INSERTs, so TIMESTAMP literals mean UTC.
const SessionSetup = "SET time_zone = '+00:00'"

// NewFieldTestGen returns a generator; the same seed yields the same rows.
func NewFieldTestGen(seed uint64) *FieldTestGen {
	g := &FieldTestGen{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	return g.WithFullRange(false)
}

// Insert returns an INSERT of rows rows into the table db.table. The
// returned string is valid until the next call.
func (g *FieldTestGen) Insert(db, table string, rows int) string {
	b := g.buf[:0]
	b = appendTable(append(b, "INSERT INTO "...), db, table)
	b = append(b, " ("...)
	for i, c := range FieldTestColumns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendIdent(b, c)
	}
	for i := 1; i <= g.extra; i++ {
		b = append(b, ",`extra_"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '`')
	}
	b = append(b, ") VALUES "...)
	for r := 0; r < rows; r++ {
		if r > 0 {
			b = append(b, ',')
		}
		b = g.appendRow(b)
	}
	g.buf = b
	return string(b)
}

func (g *FieldTestGen) appendRow(b []byte) []byte {
	r := g.rnd
	b = append(b, '(')
	b = strconv.AppendInt(b, int64(int8(r.Uint32())), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(int16(r.Uint32())), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Int64N(1<<24)-(1<<23), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(int32(r.Uint32())), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Uint64()), 10)
	b = append(b, ',')
	b = g.appendText(b, g.length(400))
	b = append(b, ',')
	b = g.appendText(b, r.IntN(3)) // CHAR(2): up to 2 characters
	b = append(b, ",'en"...)
	b = strconv.AppendInt(b, int64(1+r.IntN(3)), 10)
	b = append(b, "',"...)
	b = g.appendSet(b)
	b = append(b, ',')
	b = g.appendTime(b)
	b = append(b, ',')
	b = g.appendDate(b, g.dateFrom, g.dateTo)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(1901+r.IntN(255)), 10)
	b = append(b, ',')
	b = g.appendDateTime(b, timestampFrom, timestampTo)
	b = append(b, ',')
	b = g.appendDateTime(b, g.dateTimeFrom, g.dateTimeTo)
	b = append(b, ',')
	b = g.appendFixed2(b, 1e9-1) // FLOAT(9,2)
	b = append(b, ',')
	b = g.appendFixed2(b, 1e9-1) // DOUBLE(9,2)
	b = append(b, ',')
	b = g.appendFixed2(b, 1e9-1) // DECIMAL(9,2)
	b = append(b, ',')
	b = g.appendText(b, g.length(2000))
	b = append(b, ',')
	b = g.appendBytes(b, g.length(2000))
	b = append(b, ',')
	b = strconv.AppendUint(b, r.Uint64(), 10) // BIT(64): all 64 bits
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.IntN(2)), 10)
	b = append(b, ',')
	b = g.appendBytes(b, g.length(8000))
	b = append(b, ',')
	b = g.appendBytes(b, g.length(16000))
	b = append(b, ',')
	b = g.appendBytes(b, g.length(255))
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(uint8(r.Uint32())), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(uint16(r.Uint32())), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, r.Uint64N(1<<24), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(r.Uint32()), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, r.Uint64(), 10)
	for i := 0; i < g.extra; i++ {
		b = append(b, ',')
		if r.IntN(10) == 0 {
			b = append(b, "NULL"...)
		} else {
			b = g.appendText(b, g.length(64))
		}
	}
	return append(b, ')')
}

// Update returns an UPDATE of the row with the given id that changes four
// columns of different types.
func (g *FieldTestGen) Update(db, table string, id uint64) string {
	b := g.buf[:0]
	b = appendTable(append(b, "UPDATE "...), db, table)
	b = append(b, " SET `testint` = "...)
	b = strconv.AppendInt(b, int64(int32(g.rnd.Uint32())), 10)
	b = append(b, ", `testvarchar` = "...)
	b = g.appendText(b, g.length(400))
	b = append(b, ", `testdatetime` = "...)
	b = g.appendDateTime(b, g.dateTimeFrom, g.dateTimeTo)
	b = append(b, ", `testdecimal` = "...)
	b = g.appendFixed2(b, 1e9-1)
	b = append(b, " WHERE `id` = "...)
	b = strconv.AppendUint(b, id, 10)
	g.buf = b
	return string(b)
}

// Delete returns a DELETE of the row with the given id.
func (g *FieldTestGen) Delete(db, table string, id uint64) string {
	b := g.buf[:0]
	b = appendTable(append(b, "DELETE FROM "...), db, table)
	b = append(b, " WHERE `id` = "...)
	b = strconv.AppendUint(b, id, 10)
	g.buf = b
	return string(b)
}

// length draws a length up to max, mostly short: real rows are mostly
// small with a long tail, and the tail is what breaks replicators.
func (g *FieldTestGen) length(max int) int {
	if g.maxLen > 0 {
		return g.rnd.IntN(min(max, g.maxLen) + 1)
	}
	switch p := g.rnd.IntN(100); {
	case p < 80:
		return g.rnd.IntN(min(max, 40) + 1)
	case p < 98:
		return g.rnd.IntN(min(max, 400) + 1)
	default:
		return g.rnd.IntN(max + 1)
	}
}

// textRunes mixes ASCII, the characters SQL and CSV get wrong, and
// multi-byte UTF-8 (including a 4-byte emoji, which needs utf8mb4).
var textRunes = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,;'\"\\\t\néßж中文🙂")

// appendText appends a quoted string of n characters.
func (g *FieldTestGen) appendText(b []byte, n int) []byte {
	b = append(b, '\'')
	for i := 0; i < n; i++ {
		c := textRunes[g.rnd.IntN(len(textRunes))]
		switch c {
		case '\'', '\\':
			b = append(b, '\\', byte(c))
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = appendRune(b, c)
		}
	}
	return append(b, '\'')
}

func appendRune(b []byte, r rune) []byte {
	if r < 0x80 {
		return append(b, byte(r))
	}
	return append(b, string(r)...)
}

const hexDigits = "0123456789ABCDEF"

// appendBytes appends n random bytes (any value, zero bytes included) as a
// hex literal.
func (g *FieldTestGen) appendBytes(b []byte, n int) []byte {
	if n == 0 {
		return append(b, "''"...)
	}
	b = append(b, "X'"...)
	for i := 0; i < n; i++ {
		v := byte(g.rnd.Uint32())
		b = append(b, hexDigits[v>>4], hexDigits[v&15])
	}
	return append(b, '\'')
}

func (g *FieldTestGen) appendSet(b []byte) []byte {
	mask := g.rnd.IntN(8)
	b = append(b, '\'')
	first := true
	for i := 0; i < 3; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, "set"...)
		b = strconv.AppendInt(b, int64(i+1), 10)
	}
	return append(b, '\'')
}

// appendTime appends a TIME within MySQL's range, -838:59:59 to 838:59:59.
func (g *FieldTestGen) appendTime(b []byte) []byte {
	secs := g.rnd.IntN(2*(838*3600+59*60+59)+1) - (838*3600 + 59*60 + 59)
	b = append(b, '\'')
	if secs < 0 {
		b = append(b, '-')
		secs = -secs
	}
	b = appendPad(b, secs/3600, 2)
	b = append(b, ':')
	b = appendPad(b, secs/60%60, 2)
	b = append(b, ':')
	b = appendPad(b, secs%60, 2)
	return append(b, '\'')
}

func (g *FieldTestGen) appendDate(b []byte, fromYear, toYear int) []byte {
	b = append(b, '\'')
	b = g.appendYMD(b, fromYear, toYear)
	return append(b, '\'')
}

func (g *FieldTestGen) appendDateTime(b []byte, fromYear, toYear int) []byte {
	b = append(b, '\'')
	b = g.appendYMD(b, fromYear, toYear)
	b = append(b, ' ')
	b = appendPad(b, g.rnd.IntN(24), 2)
	b = append(b, ':')
	b = appendPad(b, g.rnd.IntN(60), 2)
	b = append(b, ':')
	b = appendPad(b, g.rnd.IntN(60), 2)
	return append(b, '\'')
}

func (g *FieldTestGen) appendYMD(b []byte, fromYear, toYear int) []byte {
	b = appendPad(b, fromYear+g.rnd.IntN(toYear-fromYear+1), 4)
	b = append(b, '-')
	b = appendPad(b, 1+g.rnd.IntN(12), 2)
	b = append(b, '-')
	// Day 28 at most keeps every month valid.
	return appendPad(b, 1+g.rnd.IntN(28), 2)
}

// appendFixed2 appends a number with two decimals, |v| <= maxCents/100.
func (g *FieldTestGen) appendFixed2(b []byte, maxCents int64) []byte {
	cents := g.rnd.Int64N(2*maxCents+1) - maxCents
	if cents < 0 {
		b = append(b, '-')
		cents = -cents
	}
	b = strconv.AppendInt(b, cents/100, 10)
	b = append(b, '.')
	return appendPad(b, int(cents%100), 2)
}

func appendPad(b []byte, v, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendTable appends `db`.`table`.
func appendTable(b []byte, db, table string) []byte {
	b = appendIdent(b, db)
	b = append(b, '.')
	return appendIdent(b, table)
}

// appendIdent appends a backquoted MySQL identifier.
func appendIdent(b []byte, name string) []byte {
	b = append(b, '`')
	for i := 0; i < len(name); i++ {
		if name[i] == '`' {
			b = append(b, '`')
		}
		b = append(b, name[i])
	}
	return append(b, '`')
}
