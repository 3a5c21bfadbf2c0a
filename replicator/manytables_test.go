package replicator

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/binlog2ch/binlog2ch/source"
)

// manyTables creates n small tables (an INT primary key, a few columns,
// rows rows each) spread round-robin over the harness's databases, over
// four connections, and returns their names.
func (h *harness) manyTables(n, rows int) []source.TableName {
	h.t.Helper()
	names := make([]source.TableName, n)
	for i := range names {
		names[i] = source.TableName{Database: h.dbs[i%len(h.dbs)], Table: fmt.Sprintf("t%04d", i)}
	}
	const conns = 4
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := h.my.Conn(context.Background())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for i := c; i < n; i += conns {
				t := "`" + names[i].Database + "`.`" + names[i].Table + "`"
				var vals []string
				for r := 1; r <= rows; r++ {
					vals = append(vals, fmt.Sprintf("(%d, %d, 'row %d of %d', '2024-01-%02d 12:00:00', %d.%02d)", r, i*r, r, i, 1+r%28, i, r))
				}
				qs := []string{"CREATE TABLE " + t + " (id INT PRIMARY KEY, a INT NOT NULL, s VARCHAR(32), d DATETIME, v DECIMAL(10,2))"}
				if rows > 0 {
					qs = append(qs, "INSERT INTO "+t+" VALUES "+strings.Join(vals, ", "))
				}
				for _, q := range qs {
					if _, err := conn.ExecContext(context.Background(), q); err != nil {
						errs <- fmt.Errorf("%s: %w", q, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
	return names
}

// queryCounts are the servers' statement counters: MySQL's global status
// (Questions, Com_select, Com_stmt_*) and ClickHouse's system.events
// (Query, SelectQuery, InsertQuery). Reading them counts too: one
// statement each side per read.
type queryCounts struct {
	my map[string]uint64
	ch map[string]uint64
}

func (h *harness) queryCounts() queryCounts {
	h.t.Helper()
	q := queryCounts{my: map[string]uint64{}, ch: map[string]uint64{}}
	rows, err := h.my.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_select', 'Com_stmt_prepare', 'Com_stmt_execute', 'Com_stmt_close', 'Connections', 'Connection_errors_max_connections')")
	if err != nil {
		h.t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var v uint64
		if err := rows.Scan(&k, &v); err != nil {
			h.t.Fatal(err)
		}
		q.my[k] = v
	}
	rows.Close()
	res, err := h.ch.Query(context.Background(), "SELECT event, value FROM system.events WHERE event IN ('Query', 'SelectQuery', 'InsertQuery')")
	if err != nil {
		h.t.Fatal(err)
	}
	for res.Next() {
		var k string
		var v uint64
		if err := res.Scan(&k, &v); err != nil {
			h.t.Fatal(err)
		}
		q.ch[k] = v
	}
	res.Close()
	return q
}

// since is what the counters grew by from before, less the reads of them.
func (q queryCounts) since(before queryCounts) queryCounts {
	d := queryCounts{my: map[string]uint64{}, ch: map[string]uint64{}}
	for k, v := range q.my {
		d.my[k] = v - before.my[k]
	}
	d.my["Questions"]-- // SHOW GLOBAL STATUS
	for k, v := range q.ch {
		d.ch[k] = v - before.ch[k]
	}
	d.ch["Query"]-- // the system.events read
	d.ch["SelectQuery"]--
	return d
}

func (q queryCounts) String() string {
	return fmt.Sprintf("MySQL: %d questions, %d Com_select, %d Com_stmt_prepare, %d Com_stmt_execute, %d connections (%d refused: too many); ClickHouse: %d queries (%d SELECT, %d INSERT)",
		q.my["Questions"], q.my["Com_select"], q.my["Com_stmt_prepare"], q.my["Com_stmt_execute"], q.my["Connections"], q.my["Connection_errors_max_connections"],
		q.ch["Query"], q.ch["SelectQuery"], q.ch["InsertQuery"])
}
