package source

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// GTIDSet is what a source has executed, in its flavour's GTID terms:
// MySQL's set of uuid[:tag]:intervals, or MariaDB's position, the last
// sequence number of each replication domain (under gtid_strict_mode a
// domain's sequence numbers only grow, so the last one covers the rest).
// The zero value is an empty set of neither flavour.
type GTIDSet struct {
	flavor string
	my     mysql.MysqlGTIDSet
	maria  map[uint32]mysql.MariadbGTID
	// seen is a MariaDB server's @@gtid_binlog_state: the last sequence
	// number of each (domain, server id) in its binlog. A promoted replica
	// reuses the sequence numbers of the transactions it never got (its
	// 0-8-8 where the lost one was 0-7-8), so whether it has a GTID is told
	// by its server id's entry, not by the domain's last number.
	seen map[[2]uint32]uint64
}

// NewGTIDSet is an empty set of the flavour.
func NewGTIDSet(flavor string) GTIDSet {
	g := GTIDSet{flavor: flavor}
	if flavor == mysql.MariaDBFlavor {
		g.maria = map[uint32]mysql.MariadbGTID{}
	} else {
		g.my = mysql.NewMysqlGTIDSet()
	}
	return g
}

// ParseGTIDSet reads a set as String writes it, and as MySQL's
// @@gtid_executed and MariaDB's @@gtid_binlog_pos print it.
func ParseGTIDSet(flavor, s string) (GTIDSet, error) {
	g := NewGTIDSet(flavor)
	s = strings.Join(strings.Fields(s), "") // MySQL breaks long sets over lines
	if s == "" {
		return g, nil
	}
	if flavor == mysql.MariaDBFlavor {
		for _, part := range strings.Split(s, ",") {
			id, err := mysql.ParseMariadbGTID(part)
			if err != nil {
				return g, fmt.Errorf("MariaDB GTID position %q: %w", s, err)
			}
			if old, ok := g.maria[id.DomainID]; !ok || id.SequenceNumber > old.SequenceNumber {
				g.maria[id.DomainID] = *id
			}
		}
		return g, nil
	}
	set, err := mysql.ParseMysqlGTIDSet(s)
	if err != nil {
		return g, fmt.Errorf("MySQL GTID set %q: %w", s, err)
	}
	g.my = *set.(*mysql.MysqlGTIDSet)
	return g, nil
}

// IsEmpty reports whether the set holds no transaction.
func (g GTIDSet) IsEmpty() bool { return len(g.my) == 0 && len(g.maria) == 0 }

func (g GTIDSet) String() string {
	if g.maria != nil {
		parts := make([]string, 0, len(g.maria))
		for _, id := range g.maria {
			parts = append(parts, id.String())
		}
		slices.Sort(parts)
		return strings.Join(parts, ",")
	}
	if g.my == nil {
		return ""
	}
	return g.my.String()
}

// GTID is one transaction's identity: its origin (a MySQL uuid[:tag], a
// MariaDB domain) and its number there.
type GTID struct {
	Origin string
	N      int64
	sid    uuid.UUID
	tag    mysql.Tag
	maria  mysql.MariadbGTID
}

// mysqlGTID is a MySQL transaction's GTID; ok is false for an anonymous
// one (gtid_mode OFF).
func mysqlGTID(sid []byte, tag mysql.Tag, gno int64) (GTID, bool) {
	u, err := uuid.FromBytes(sid)
	if err != nil || gno <= 0 || u == (uuid.UUID{}) {
		return GTID{}, false
	}
	origin := u.String()
	if tag != (mysql.Tag{}) {
		origin += ":" + tag.String()
	}
	return GTID{Origin: origin, N: gno, sid: u, tag: tag}, true
}

func mariadbGTID(id mysql.MariadbGTID) GTID {
	return GTID{Origin: strconv.FormatUint(uint64(id.DomainID), 10), N: int64(id.SequenceNumber), maria: id}
}

// add records a transaction as executed.
func (g *GTIDSet) add(t GTID) {
	if g.maria == nil && g.my == nil {
		if t.sid == (uuid.UUID{}) {
			*g = NewGTIDSet(mysql.MariaDBFlavor)
		} else {
			*g = NewGTIDSet(mysql.MySQLFlavor)
		}
	}
	if g.maria != nil {
		g.maria[t.maria.DomainID] = t.maria
		return
	}
	g.my.AddGTIDWithTag(t.sid, t.tag, t.N)
}

// GTIDGap is what one origin of a set lacks that another set has.
type GTIDGap struct {
	Origin string // a MySQL uuid[:tag] or a MariaDB domain id
	From   int64  // the smallest transaction number missing
	Text   string // the transactions missing, as GTIDs
}

// Missing lists what g holds and have lacks, by origin; empty when have
// holds all of g.
func (g GTIDSet) Missing(have GTIDSet) []GTIDGap {
	var gaps []GTIDGap
	if g.maria != nil {
		for d, id := range g.maria {
			var last uint64
			ok := false
			if have.seen != nil {
				last, ok = have.seen[[2]uint32{d, id.ServerID}]
			} else if h, found := have.maria[d]; found {
				last, ok = h.SequenceNumber, true
			}
			if ok && last >= id.SequenceNumber {
				continue
			}
			from := uint64(1)
			if ok {
				from = last + 1
			}
			text := fmt.Sprintf("%d-%d-%d", d, id.ServerID, id.SequenceNumber)
			if from < id.SequenceNumber {
				text = fmt.Sprintf("domain %d sequence numbers %d to %d (the last %s)", d, from, id.SequenceNumber, text)
			}
			gaps = append(gaps, GTIDGap{Origin: strconv.FormatUint(uint64(d), 10), From: int64(from), Text: text})
		}
	} else {
		for sid, tags := range g.my {
			for tag, ivs := range tags {
				var hv mysql.IntervalSlice
				if have.my != nil {
					hv = have.my[sid][tag]
				}
				miss := subtract(ivs, hv)
				if len(miss) == 0 {
					continue
				}
				origin := sid.String()
				if tag != (mysql.Tag{}) {
					origin += ":" + tag.String()
				}
				parts := make([]string, len(miss))
				for i, iv := range miss {
					parts[i] = iv.String()
				}
				gaps = append(gaps, GTIDGap{Origin: origin, From: miss[0].Start, Text: origin + ":" + strings.Join(parts, ":")})
			}
		}
	}
	slices.SortFunc(gaps, func(a, b GTIDGap) int { return strings.Compare(a.Origin, b.Origin) })
	return gaps
}

// subtract is a - b for normalized interval lists ([start, stop)).
func subtract(a, b mysql.IntervalSlice) mysql.IntervalSlice {
	var out mysql.IntervalSlice
	for _, iv := range a {
		start := iv.Start
		for _, cut := range b {
			if cut.Stop <= start || cut.Start >= iv.Stop {
				continue
			}
			if cut.Start > start {
				out = append(out, mysql.Interval{Start: start, Stop: cut.Start})
			}
			start = max(start, cut.Stop)
		}
		if start < iv.Stop {
			out = append(out, mysql.Interval{Start: start, Stop: iv.Stop})
		}
	}
	return out
}

// Shares reports whether the two sets have an origin in common: a server
// whose set shares nothing with a checkpoint's is outside its topology.
// With a MariaDB server's binlog state, an origin is a (domain, server id)
// pair: every MariaDB server writes domain 0 by default.
func (g GTIDSet) Shares(o GTIDSet) bool {
	for d, id := range g.maria {
		if o.seen != nil {
			if _, ok := o.seen[[2]uint32{d, id.ServerID}]; ok {
				return true
			}
		} else if _, ok := o.maria[d]; ok {
			return true
		}
	}
	for sid := range g.my {
		if _, ok := o.my[sid]; ok {
			return true
		}
	}
	return false
}

// ExecutedGTIDs reads what the server's binlog holds, as a GTID set:
// @@gtid_executed on MySQL (empty with gtid_mode OFF); on MariaDB
// @@gtid_binlog_pos with @@gtid_binlog_state (a promoted replica's include
// what it replicated, with log_slave_updates).
func ExecutedGTIDs(ctx context.Context, db *sql.DB, flavor string) (GTIDSet, error) {
	if flavor != mysql.MariaDBFlavor {
		var s sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&s); err != nil {
			return GTIDSet{}, fmt.Errorf("read the server's GTIDs (@@gtid_executed): %w", err)
		}
		return ParseGTIDSet(flavor, s.String)
	}
	var pos, state sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_binlog_state").Scan(&pos, &state); err != nil {
		return GTIDSet{}, fmt.Errorf("read the server's GTIDs (@@gtid_binlog_pos, @@gtid_binlog_state): %w", err)
	}
	return parseMariaDBState(pos.String, state.String)
}

// parseMariaDBState is a MariaDB server's GTID position with its binlog
// state.
func parseMariaDBState(pos, state string) (GTIDSet, error) {
	g, err := ParseGTIDSet(mysql.MariaDBFlavor, pos)
	if err != nil {
		return g, err
	}
	g.seen = map[[2]uint32]uint64{}
	for _, part := range strings.Split(strings.Join(strings.Fields(state), ""), ",") {
		if part == "" {
			continue
		}
		id, err := mysql.ParseMariadbGTID(part)
		if err != nil {
			return g, fmt.Errorf("@@gtid_binlog_state %q: %w", state, err)
		}
		k := [2]uint32{id.DomainID, id.ServerID}
		g.seen[k] = max(g.seen[k], id.SequenceNumber)
	}
	return g, nil
}

// PurgedGTIDs reads what the server executed but no longer has in its
// binlog: @@gtid_purged on MySQL. MariaDB has no such variable (it says
// so when asked for a GTID it no longer has): an empty set.
func PurgedGTIDs(ctx context.Context, db *sql.DB, flavor string) (GTIDSet, error) {
	if flavor == mysql.MariaDBFlavor {
		return NewGTIDSet(flavor), nil
	}
	var s sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_purged").Scan(&s); err != nil {
		return GTIDSet{}, fmt.Errorf("read @@gtid_purged: %w", err)
	}
	return ParseGTIDSet(flavor, s.String)
}

// TableGTIDs is, per replicated table (db.table), the newest transaction
// number of each GTID origin that changed it: when a server lacks some of
// the transactions binlog2ch applied, the tables they may have changed are
// those touched at or after the first one missing.
type TableGTIDs map[string]map[string]int64

// Clone is a deep copy.
func (t TableGTIDs) Clone() TableGTIDs {
	c := make(TableGTIDs, len(t))
	for k, v := range t {
		m := make(map[string]int64, len(v))
		for o, n := range v {
			m[o] = n
		}
		c[k] = m
	}
	return c
}

// Affected lists the tables a transaction in gaps may have changed.
func (t TableGTIDs) Affected(gaps []GTIDGap) []string {
	var out []string
	for table, origins := range t {
		for _, g := range gaps {
			if n, ok := origins[g.Origin]; ok && n >= g.From {
				out = append(out, table)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// CheckHistory compares a checkpoint's position with the server's binlog
// files (SHOW BINARY LOGS): a file shorter than the position, a file
// newer than the server's newest or a file of another basename means the
// binlog history restarted. A file older than the oldest is left to the
// stream, which reports it purged.
func CheckHistory(ctx context.Context, db *sql.DB, p Position) error {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	type file struct {
		name string
		size uint64
	}
	var files []file
	for rows.Next() {
		var f file
		dest := make([]any, len(cols))
		for i := range dest {
			dest[i] = new(sql.RawBytes)
		}
		dest[0], dest[1] = &f.name, &f.size
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("SHOW BINARY LOGS: %w", err)
		}
		files = append(files, f)
	}
	if err := rows.Err(); err != nil || len(files) == 0 {
		return err
	}
	base := func(name string) string { return name[:max(0, strings.LastIndexByte(name, '.'))] }
	newest := files[len(files)-1]
	if base(newest.name) != base(p.File) {
		return &HistoryError{At: p, Reason: fmt.Sprintf("the server's binlog files are named %s.*, the checkpoint's %s.*", base(newest.name), base(p.File))}
	}
	for _, f := range files {
		if f.name == p.File {
			if f.size < uint64(p.Pos) {
				return &HistoryError{At: p, Reason: fmt.Sprintf("the server's %s has only %d bytes", f.name, f.size)}
			}
			return nil
		}
	}
	if MustFileIndex(p.File) > MustFileIndex(newest.name) {
		return &HistoryError{At: p, Reason: fmt.Sprintf("the server's newest binlog file is %s", newest.name)}
	}
	return nil
}

// GTIDsAt is the executed GTID set at a binlog position, where the server
// can tell: MariaDB's BINLOG_GTID_POS. ok is false on MySQL, which has no
// such function (a stream learns it at the next file's header).
func GTIDsAt(ctx context.Context, db *sql.DB, flavor string, p Position) (gtids string, ok bool, err error) {
	if flavor != mysql.MariaDBFlavor {
		return "", false, nil
	}
	var g sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", p.File, p.Pos).Scan(&g); err != nil {
		return "", false, fmt.Errorf("BINLOG_GTID_POS(%s): %w", p, err)
	}
	return g.String, g.Valid, nil
}

// CurrentGTIDPosition is the server's binlog position with the executed
// GTID set there, read together: SHOW MASTER STATUS's Executed_Gtid_Set
// on MySQL, BINLOG_GTID_POS of the position on MariaDB.
func CurrentGTIDPosition(ctx context.Context, db *sql.DB, flavor string) (Position, string, error) {
	p, executed, err := currentPosition(ctx, db)
	if err != nil || flavor != mysql.MariaDBFlavor {
		return p, strings.Join(strings.Fields(executed), ""), err
	}
	g, _, err := GTIDsAt(ctx, db, flavor, p)
	return p, g, err
}

// Within is the part of g that have holds, as a set to read on from: on
// MySQL the intersection; on MariaDB, per domain, the last transaction of
// g's server that have has (its binlog state). ok is false when have has
// none of a domain's.
func (g GTIDSet) Within(have GTIDSet) (GTIDSet, bool) {
	out := NewGTIDSet(g.flavor)
	if g.maria != nil {
		for d, id := range g.maria {
			last, found := have.seen[[2]uint32{d, id.ServerID}]
			if have.seen == nil {
				h, ok := have.maria[d]
				last, found = h.SequenceNumber, ok
			}
			if !found {
				return out, false
			}
			id.SequenceNumber = min(id.SequenceNumber, last)
			out.maria[d] = id
		}
		return out, true
	}
	for sid, tags := range g.my {
		for tag, ivs := range tags {
			var hv mysql.IntervalSlice
			if have.my != nil {
				hv = have.my[sid][tag]
			}
			keep := subtract(ivs, subtract(ivs, hv))
			if len(keep) == 0 {
				continue
			}
			if out.my[sid] == nil {
				out.my[sid] = map[mysql.Tag]mysql.IntervalSlice{}
			}
			out.my[sid][tag] = keep
		}
	}
	return out, !out.IsEmpty()
}

// OldestBinlogFile is the first file SHOW BINARY LOGS lists.
func OldestBinlogFile(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return "", fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	if !rows.Next() {
		return "", fmt.Errorf("SHOW BINARY LOGS lists no file: %w", rows.Err())
	}
	var name string
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(sql.RawBytes)
	}
	dest[0] = &name
	if err := rows.Scan(dest...); err != nil {
		return "", err
	}
	return name, nil
}

// learnGTIDs takes the executed set from a file's header, which the
// server writes with the set before the file: MySQL's previous GTIDs,
// MariaDB's GTID list (its binlog state, whose last number per domain is
// the position). The stream started without a set knows it from here.
func (s *Stream) learnGTIDs(e replication.Event) {
	switch e := e.(type) {
	case *replication.PreviousGTIDsEvent:
		if g, err := ParseGTIDSet(mysql.MySQLFlavor, e.GTIDSets); err == nil && s.srv.Flavor != mysql.MariaDBFlavor {
			s.gtids, s.gtidsKnown = g, true
		}
	case *replication.MariadbGTIDListEvent:
		if s.srv.Flavor == mysql.MariaDBFlavor {
			g := NewGTIDSet(mysql.MariaDBFlavor)
			for _, id := range e.GTIDs {
				if old, ok := g.maria[id.DomainID]; !ok || id.SequenceNumber > old.SequenceNumber {
					g.maria[id.DomainID] = id
				}
			}
			s.gtids, s.gtidsKnown = g, true
		}
	}
}
