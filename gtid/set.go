// Package gtid holds GTID sets as binlog2ch compares them: a checkpoint's
// against a server's (what it lacks, whether they share an origin), in
// MySQL's and MariaDB's terms. It never talks to a server: source reads
// the sets.
package gtid

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/google/uuid"
)

// Set is what a source has executed, in its flavour's GTID terms:
// MySQL's set of uuid[:tag]:intervals, or MariaDB's position, the last
// sequence number of each replication domain (under gtid_strict_mode a
// domain's sequence numbers only grow, so the last one covers the rest).
// The zero value is an empty set of neither flavour.
type Set struct {
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

// NewSet is an empty set of the flavour.
func NewSet(flavor string) Set {
	g := Set{flavor: flavor}
	if flavor == mysql.MariaDBFlavor {
		g.maria = map[uint32]mysql.MariadbGTID{}
	} else {
		g.my = mysql.NewMysqlGTIDSet()
	}
	return g
}

// Parse reads a set as String writes it, and as MySQL's
// @@gtid_executed and MariaDB's @@gtid_binlog_pos print it.
func Parse(flavor, s string) (Set, error) {
	g := NewSet(flavor)
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
func (g Set) IsEmpty() bool { return len(g.my) == 0 && len(g.maria) == 0 }

func (g Set) String() string {
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

// FromMySQL is a MySQL transaction's GTID; ok is false for an anonymous
// one (gtid_mode OFF).
func FromMySQL(sid []byte, tag mysql.Tag, gno int64) (GTID, bool) {
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

// FromMariaDB is a MariaDB transaction's GTID.
func FromMariaDB(id mysql.MariadbGTID) GTID {
	return GTID{Origin: strconv.FormatUint(uint64(id.DomainID), 10), N: int64(id.SequenceNumber), maria: id}
}

// Add records a transaction as executed.
func (g *Set) Add(t GTID) {
	if g.maria == nil && g.my == nil {
		if t.sid == (uuid.UUID{}) {
			*g = NewSet(mysql.MariaDBFlavor)
		} else {
			*g = NewSet(mysql.MySQLFlavor)
		}
	}
	if g.maria != nil {
		g.maria[t.maria.DomainID] = t.maria
		return
	}
	g.my.AddGTIDWithTag(t.sid, t.tag, t.N)
}

// Gap is what one origin of a set lacks that another set has.
type Gap struct {
	Origin string // a MySQL uuid[:tag] or a MariaDB domain id
	From   int64  // the smallest transaction number missing
	Text   string // the transactions missing, as GTIDs
}

// Missing lists what g holds and have lacks, by origin; empty when have
// holds all of g.
func (g Set) Missing(have Set) []Gap {
	var gaps []Gap
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
			gaps = append(gaps, Gap{Origin: strconv.FormatUint(uint64(d), 10), From: int64(from), Text: text})
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
				gaps = append(gaps, Gap{Origin: origin, From: miss[0].Start, Text: origin + ":" + strings.Join(parts, ":")})
			}
		}
	}
	slices.SortFunc(gaps, func(a, b Gap) int { return strings.Compare(a.Origin, b.Origin) })
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
func (g Set) Shares(o Set) bool {
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

// ParseMariaDBState is a MariaDB server's GTID position with its binlog
// state.
func ParseMariaDBState(pos, state string) (Set, error) {
	g, err := Parse(mysql.MariaDBFlavor, pos)
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

// Within is the part of g that have holds, as a set to read on from: on
// MySQL the intersection; on MariaDB, per domain, the last transaction of
// g's server that have has (its binlog state). ok is false when have has
// none of a domain's.
func (g Set) Within(have Set) (Set, bool) {
	out := NewSet(g.flavor)
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

// FromMariaDBList is the set a MariaDB GTID list event holds (a binlog
// file's header: its binlog state, whose last number per domain is the
// position).
func FromMariaDBList(ids []mysql.MariadbGTID) Set {
	g := NewSet(mysql.MariaDBFlavor)
	for _, id := range ids {
		if old, ok := g.maria[id.DomainID]; !ok || id.SequenceNumber > old.SequenceNumber {
			g.maria[id.DomainID] = id
		}
	}
	return g
}

// EncodeMySQL is a MySQL set as COM_BINLOG_DUMP_GTID sends it.
func (g Set) EncodeMySQL() []byte { return g.my.Encode() }
