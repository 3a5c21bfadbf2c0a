package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrNoTable is a table information_schema does not show: it does not
// exist, or the user cannot see it.
var ErrNoTable = errors.New("does not exist (or the user cannot see it)")

// Loaded is one table's definition, or why it could not be read.
type Loaded struct {
	Table *Table
	Err   error
}

// loadBatch bounds the tables one statement of LoadTables names (about
// 40 KB of names).
const loadBatch = 1000

// LoadTable reads a table's definition from information_schema.
func LoadTable(ctx context.Context, db *sql.DB, database, table string) (*Table, error) {
	n := TableName{database, table}
	// Equalities, not IN lists: the server then opens only this table's
	// definition.
	got, err := load(ctx, db, []TableName{n}, "TABLE_SCHEMA = ? AND TABLE_NAME = ?", []any{database, table}, n.String())
	if err != nil {
		return nil, err
	}
	return got[n].Table, got[n].Err
}

// LoadTables reads many tables' definitions with two statements
// (information_schema's COLUMNS and STATISTICS) per loadBatch tables,
// where LoadTable takes two per table. Each table gets what LoadTable
// returns for it: its definition, or its own error (ErrNoTable, a type
// without a mapping). err is a statement that failed.
func LoadTables(ctx context.Context, db *sql.DB, names []TableName) (map[TableName]Loaded, error) {
	out := make(map[TableName]Loaded, len(names))
	names = uniqueNames(names)
	for start := 0; start < len(names); start += loadBatch {
		part := names[start:min(start+loadBatch, len(names))]
		where, args := NameFilter(part, "TABLE_SCHEMA", "TABLE_NAME")
		got, err := load(ctx, db, part, where, args, fmt.Sprintf("%d tables", len(part)))
		if err != nil {
			return nil, err
		}
		for n, l := range got {
			out[n] = l
		}
	}
	return out, nil
}

func uniqueNames(names []TableName) []TableName {
	seen := make(map[TableName]bool, len(names))
	out := make([]TableName, 0, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// NameFilter is a WHERE condition on information_schema's database and
// table name columns that holds for every one of names, with its
// arguments: each database and each table name listed once, so it may
// also hold for other tables (a name selected in one database only),
// which the caller skips. The server reads only the tables whose names
// pass it.
func NameFilter(names []TableName, dbCol, tableCol string) (string, []any) {
	var dbs, tables []any
	seenDB, seenTable := map[string]bool{}, map[string]bool{}
	for _, n := range names {
		if !seenDB[n.Database] {
			seenDB[n.Database] = true
			dbs = append(dbs, n.Database)
		}
		if !seenTable[n.Table] {
			seenTable[n.Table] = true
			tables = append(tables, n.Table)
		}
	}
	marks := func(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
	return fmt.Sprintf("%s IN (%s) AND %s IN (%s)", dbCol, marks(len(dbs)), tableCol, marks(len(tables))), append(dbs, tables...)
}

// load reads the definitions of names with the columns and keys where
// selects; what names them in errors of a statement.
func load(ctx context.Context, db *sql.DB, names []TableName, where string, args []any, what string) (map[TableName]Loaded, error) {
	tables := make(map[TableName]*Loaded, len(names))
	for _, n := range names {
		tables[n] = &Loaded{}
	}
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, IFNULL(CHARACTER_SET_NAME, '')
		FROM information_schema.COLUMNS WHERE `+where+` ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`, args...)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var n TableName
		var name, colType, dataType, nullable, charset string
		if err := rows.Scan(&n.Database, &n.Table, &name, &colType, &dataType, &nullable, &charset); err != nil {
			return nil, fmt.Errorf("read columns of %s: %w", what, err)
		}
		l := tables[n]
		if l == nil || l.Err != nil {
			continue // not asked for, or failed at an earlier column
		}
		c, err := ParseColumnType(colType, dataType)
		if err != nil {
			l.Table, l.Err = nil, fmt.Errorf("%s.%s: %w", n, name, err)
			continue
		}
		c.Name = name
		c.Nullable = nullable == "YES"
		if c.Kind == KindChar {
			c.Charset = CharsetName(charset)
		}
		if l.Table == nil {
			l.Table = &Table{Database: n.Database, Name: n.Table}
		}
		l.Table.Columns = append(l.Table.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", what, err)
	}
	rows.Close()
	for n, l := range tables {
		if l.Table == nil && l.Err == nil {
			l.Err = fmt.Errorf("table %s %w", n, ErrNoTable)
		}
	}
	if err := loadKeys(ctx, db, tables, where, args, what); err != nil {
		return nil, err
	}
	out := make(map[TableName]Loaded, len(tables))
	for n, l := range tables {
		out[n] = *l
	}
	return out, nil
}

// loadKeys sets the tables' primary and unique keys.
func loadKeys(ctx context.Context, db *sql.DB, tables map[TableName]*Loaded, where string, args []any, what string) error {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS
		WHERE `+where+` AND NON_UNIQUE = 0 ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, args...)
	if err != nil {
		return fmt.Errorf("read keys of %s: %w", what, err)
	}
	defer rows.Close()
	type tableKeys struct {
		keys  map[string][]int
		order []string
	}
	found := map[TableName]*tableKeys{}
	for rows.Next() {
		var n TableName
		var index, col string
		if err := rows.Scan(&n.Database, &n.Table, &index, &col); err != nil {
			return fmt.Errorf("read keys of %s: %w", what, err)
		}
		l := tables[n]
		if l == nil || l.Err != nil {
			continue
		}
		i := l.Table.ColumnIndex(col)
		if i < 0 {
			l.Table, l.Err = nil, fmt.Errorf("key %s of %s names unknown column %s", index, n, col)
			continue
		}
		k := found[n]
		if k == nil {
			k = &tableKeys{keys: map[string][]int{}}
			found[n] = k
		}
		if _, ok := k.keys[index]; !ok {
			k.order = append(k.order, index)
		}
		k.keys[index] = append(k.keys[index], i)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read keys of %s: %w", what, err)
	}
	for n, k := range found {
		t := tables[n].Table
		if t == nil {
			continue // a key named an unknown column
		}
		t.PrimaryKey = k.keys["PRIMARY"]
		for _, name := range k.order {
			if name == "PRIMARY" {
				continue
			}
			ok := true
			for _, i := range k.keys[name] {
				ok = ok && !t.Columns[i].Nullable
			}
			if ok {
				t.UniqueKey = k.keys[name]
				break
			}
		}
	}
	return nil
}

// Loader reads live table definitions for callers that ask at the same
// time (a writer per table, started as each table's first event
// arrives): the tables asked for while a read runs are read together by
// the next one, with LoadTables. A thousand writers starting at once thus
// cost a few statements on one connection, not two each on as many
// connections as the pool opens.
type Loader struct {
	db      *sql.DB
	mu      sync.Mutex
	queue   []*loadRequest
	reading bool
	// BeforeRead, a pause point for tests (nil otherwise; set before the
	// first Load), runs before each read with the number of tables it
	// reads; it may block.
	BeforeRead func(tables int)
}

// NewLoader reads definitions through db.
func NewLoader(db *sql.DB) *Loader { return &Loader{db: db} }

type loadRequest struct {
	name TableName
	done chan struct{}
	got  Loaded
	// read is the read serving the request once it started; gone marks a
	// caller that left (under Loader.mu).
	read *loadRead
	gone bool
}

// loadRead is one LoadTables call; it is cancelled once every caller it
// serves has left.
type loadRead struct {
	cancel  context.CancelFunc
	waiting int // under Loader.mu
}

// Load is LoadTable for database.table, read together with the other
// tables asked for meanwhile.
func (l *Loader) Load(ctx context.Context, database, table string) (*Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &loadRequest{name: TableName{database, table}, done: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, r)
	start := !l.reading
	l.reading = true
	l.mu.Unlock()
	if start {
		go l.serve()
	}
	select {
	case <-r.done:
		return r.got.Table, r.got.Err
	case <-ctx.Done():
		l.mu.Lock()
		r.gone = true
		if r.read != nil {
			if r.read.waiting--; r.read.waiting == 0 {
				r.read.cancel()
			}
		}
		l.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Queued is how many requests wait for the next read.
func (l *Loader) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// serve reads the queued tables until none is left.
func (l *Loader) serve() {
	for {
		l.mu.Lock()
		var batch []*loadRequest
		for _, r := range l.queue {
			if !r.gone {
				batch = append(batch, r)
			}
		}
		l.queue = nil
		if len(batch) == 0 {
			l.reading = false
			l.mu.Unlock()
			return
		}
		// Not any one caller's context: the read serves them all.
		ctx, cancel := context.WithCancel(context.Background())
		read := &loadRead{cancel: cancel, waiting: len(batch)}
		names := make([]TableName, len(batch))
		for i, r := range batch {
			r.read = read
			names[i] = r.name
		}
		l.mu.Unlock()
		if l.BeforeRead != nil {
			l.BeforeRead(len(names))
		}
		var got map[TableName]Loaded
		var err error
		if len(names) == 1 {
			var t *Table
			t, err = LoadTable(ctx, l.db, names[0].Database, names[0].Table)
			got = map[TableName]Loaded{names[0]: {Table: t, Err: err}}
			err = nil
		} else {
			got, err = LoadTables(ctx, l.db, names)
		}
		cancel()
		handed := make(map[TableName]bool, len(batch))
		for _, r := range batch {
			if err != nil {
				r.got = Loaded{Err: err}
			} else {
				r.got = got[r.name]
				// Two callers asking for one table get a copy each: a
				// caller may change its own.
				if r.got.Table != nil && handed[r.name] {
					r.got.Table = r.got.Table.clone()
				}
				handed[r.name] = true
			}
			close(r.done)
		}
	}
}

// clone is a deep copy of t.
func (t *Table) clone() *Table {
	c := *t
	c.Columns = append([]Column(nil), t.Columns...)
	for i := range c.Columns {
		c.Columns[i].Labels = append([]string(nil), t.Columns[i].Labels...)
	}
	c.PrimaryKey = append([]int(nil), t.PrimaryKey...)
	c.UniqueKey = append([]int(nil), t.UniqueKey...)
	return &c
}
