package retention

import (
	"math"
	"testing"
	"time"
)

func TestSettingsOf(t *testing.T) {
	for _, c := range []struct {
		name    string
		vars    map[string]string
		expire  time.Duration
		setting string
		size    uint64
	}{
		{"MariaDB default", map[string]string{"binlog_expire_logs_seconds": "0", "expire_logs_days": "0.000000"}, 0, "", 0},
		{"MariaDB linked", map[string]string{"binlog_expire_logs_seconds": "43200", "expire_logs_days": "0.500000"}, 12 * time.Hour, "binlog_expire_logs_seconds", 0},
		{"MariaDB 10.5 days", map[string]string{"expire_logs_days": "2"}, 48 * time.Hour, "expire_logs_days", 0},
		{"MySQL days when seconds are 0", map[string]string{"binlog_expire_logs_seconds": "0", "expire_logs_days": "3"}, 72 * time.Hour, "expire_logs_days", 0},
		{"MySQL auto purge off", map[string]string{"binlog_expire_logs_seconds": "2592000", "binlog_expire_logs_auto_purge": "OFF"}, 0, "", 0},
		{"MariaDB 11.4 size", map[string]string{"binlog_expire_logs_seconds": "0", "max_binlog_total_size": "1048576", "binlog_space_limit": "1048576"}, 0, "", 1 << 20},
	} {
		s, err := settingsOf(c.vars)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.Expire != c.expire || s.ExpireSetting != c.setting || s.SizeLimit != c.size {
			t.Errorf("%s: %+v, want expire %v (%s), size %d", c.name, s, c.expire, c.setting, c.size)
		}
	}
}

func TestComputeSizeLimit(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	files := []File{{"b.000001", 400}, {"b.000002", 300}, {"b.000003", 200}, {"b.000004", 100}}
	s := Settings{SizeLimit: 1000, SizeSetting: "max_binlog_total_size"}
	// b.000002 goes once it and the files after it pass 1000 bytes: 400
	// more, at 10 bytes/s.
	e := Compute(s, files, "b.000002", now.Add(-time.Hour), now, 10)
	if e.By != BySize || e.Setting != "max_binlog_total_size" || e.Headroom(now) != 40 {
		t.Fatalf("%+v, headroom %v: want 40 s by size", e, e.Headroom(now))
	}
	// Idle: no growth, nothing purges it.
	if e := Compute(s, files, "b.000002", now.Add(-time.Hour), now, 0); !e.Unlimited || !math.IsInf(e.Headroom(now), 1) || e.Setting != "max_binlog_total_size" {
		t.Fatalf("idle: %+v", e)
	}
	// Over the limit already: due now.
	if e := Compute(Settings{SizeLimit: 500}, files, "b.000002", now, now, 0); e.Headroom(now) != 0 {
		t.Fatalf("over the limit: %+v", e)
	}
	// The age limit first.
	s.Expire, s.ExpireSetting = 2*time.Hour, "binlog_expire_logs_seconds"
	if e := Compute(s, files, "b.000002", now.Add(-2*time.Hour+10*time.Second), now, 10); e.By != ByAge || e.Headroom(now) != 10 {
		t.Fatalf("age first: %+v, headroom %v", e, e.Headroom(now))
	}
	// The active file is never purged by size.
	if e := Compute(Settings{SizeLimit: 50}, files, "b.000004", time.Time{}, now, 10); !e.Unlimited || !e.Active {
		t.Fatalf("active: %+v", e)
	}
	if e := Compute(s, files, "b.000000", now, now, 10); !e.Gone || !math.IsInf(e.Headroom(now), -1) {
		t.Fatalf("gone: %+v", e)
	}
}

func TestMeasureGrowth(t *testing.T) {
	var w Watcher
	t0 := time.Unix(1_000_000, 0)
	if r := w.measure([]File{{"b.1", 100}}, t0); r != 0 {
		t.Fatalf("first check: %v", r)
	}
	// 50 more bytes in b.1, then b.2 with 250: 300 bytes in 30 s.
	if r := w.measure([]File{{"b.1", 150}, {"b.2", 250}}, t0.Add(30*time.Second)); r != 10 {
		t.Fatalf("rate %v, want 10", r)
	}
	// RESET MASTER: measured again from here.
	if r := w.measure([]File{{"b.1", 10}}, t0.Add(60*time.Second)); r != 0 {
		t.Fatalf("after a reset: %v", r)
	}
}
