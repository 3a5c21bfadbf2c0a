package gtid

import (
	"slices"
	"strings"
	"testing"
)

// TestSetMissing: what a server lacks of a checkpoint's set, for
// MySQL's interval sets (tags included) and MariaDB's positions.
func TestSetMissing(t *testing.T) {
	const u1, u2 = "5ccc1033-44a8-11ea-bd59-0242ac190003", "896e7882-18fe-11ef-ab88-22222d34d411"
	for _, c := range []struct {
		flavor, want, have string
		gaps               []string
		from               []int64
	}{
		{"mysql", u1 + ":1-10", u1 + ":1-12", nil, nil},
		{"mysql", u1 + ":1-10", u1 + ":1-7", []string{u1 + ":8-10"}, []int64{8}},
		{"mysql", u1 + ":1-10", u1 + ":1-3:5-9", []string{u1 + ":4:10"}, []int64{4}},
		{"mysql", u1 + ":1-10:blue:1-4," + u2 + ":1-2", u1 + ":1-10:blue:1-2", []string{u1 + ":blue:3-4", u2 + ":1-2"}, []int64{3, 1}},
		{"mariadb", "0-7-9", "0-7-12", nil, nil},
		{"mariadb", "0-7-9,1-7-3", "0-7-7,1-7-3", []string{"domain 0 sequence numbers 8 to 9 (the last 0-7-9)"}, []int64{8}},
		{"mariadb", "0-7-9", "0-7-8", []string{"0-7-9"}, []int64{9}},
	} {
		want, err := Parse(c.flavor, c.want)
		if err != nil {
			t.Fatal(err)
		}
		if want.String() != c.want && c.flavor == "mysql" && !strings.Contains(c.want, ",") {
			t.Errorf("%q reads back as %q", c.want, want.String())
		}
		have, err := Parse(c.flavor, c.have)
		if err != nil {
			t.Fatal(err)
		}
		var gaps []string
		var from []int64
		for _, g := range want.Missing(have) {
			gaps, from = append(gaps, g.Text), append(from, g.From)
		}
		if !slices.Equal(gaps, c.gaps) || !slices.Equal(from, c.from) {
			t.Errorf("%s %s lacks of %s: %q from %v, want %q from %v", c.flavor, c.have, c.want, gaps, from, c.gaps, c.from)
		}
		if !want.Shares(have) {
			t.Errorf("%s and %s share no origin", c.want, c.have)
		}
	}
	other, _ := Parse("mysql", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5")
	if mine, _ := Parse("mysql", u1+":1-3"); mine.Shares(other) {
		t.Error("sets of different servers share an origin")
	}
}

// TestMariaDBPromotedReplica: a promoted replica reuses the sequence
// numbers of transactions it never received (its 0-8-8 where the lost one
// was 0-7-8): the binlog state's per-server entries tell what it has.
func TestMariaDBPromotedReplica(t *testing.T) {
	cp, _ := Parse("mariadb", "0-7-9")
	promoted, err := ParseMariaDBState("0-8-12", "0-7-7,0-8-12")
	if err != nil {
		t.Fatal(err)
	}
	gaps := cp.Missing(promoted)
	if len(gaps) != 1 || gaps[0].Text != "domain 0 sequence numbers 8 to 9 (the last 0-7-9)" {
		t.Errorf("promoted replica without 0-7-8 and 0-7-9: gaps %+v", gaps)
	}
	if !cp.Shares(promoted) {
		t.Error("the promoted replica of the same primary is outside the topology")
	}
	caughtUp, _ := ParseMariaDBState("0-8-12", "0-7-9,0-8-12")
	if gaps := cp.Missing(caughtUp); len(gaps) != 0 {
		t.Errorf("a replica that had everything lacks %+v", gaps)
	}
	stranger, _ := ParseMariaDBState("0-3-900", "0-3-900")
	if cp.Shares(stranger) {
		t.Error("a server that never had server 7's transactions shares the topology")
	}
	// Twice in a row: the checkpoint saved on 8, the next replica has 8's
	// up to 11 only.
	cp2, _ := Parse("mariadb", "0-8-12")
	third, _ := ParseMariaDBState("0-9-13", "0-7-7,0-8-11,0-9-13")
	if gaps := cp2.Missing(third); len(gaps) != 1 || gaps[0].From != 12 {
		t.Errorf("second failover: gaps %+v", gaps)
	}
}

// TestTouchedAffected: the tables changed at or after the first missing
// transaction of an origin.
func TestTouchedAffected(t *testing.T) {
	touched := Tables{"d.a": {"0": 5}, "d.b": {"0": 9}, "d.c": {"1": 9}, "d.d": {"0": 8, "1": 1}}
	got := touched.Affected([]Gap{{Origin: "0", From: 8}})
	if !slices.Equal(got, []string{"d.b", "d.d"}) {
		t.Errorf("affected %v", got)
	}
}
