package catalog

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/binlog2ch/binlog2ch/schema"
)

// Collations reads the server's collation ids: information_schema's
// COLLATIONS, and on MariaDB 10.10+ also the ids of the UCA 14 collations
// that table lists without.
func Collations(ctx context.Context, db *sql.DB) (map[uint64]string, error) {
	out := map[uint64]string{}
	read := func(q string) error {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id uint64
			var cs string
			if err := rows.Scan(&id, &cs); err != nil {
				return err
			}
			out[id] = schema.CharsetName(cs)
		}
		return rows.Err()
	}
	if err := read("SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL"); err != nil {
		return nil, fmt.Errorf("read the collations: %w", err)
	}
	// MySQL has no ID in this table: nothing to add there.
	_ = read("SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE ID IS NOT NULL")
	return out, nil
}
