package replicator

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFaultMySQLFrozen: MariaDB stopped with SIGSTOP (a frozen host, a
// lost network path: the TCP connection stays up, nothing arrives). The
// silent stream counts as dead after mysql.stall_timeout: /readyz answers
// 503 with mysql_connected false while the server is frozen, the reader
// keeps checking in (/healthz 200: closing the dead connection does not
// block it), and after SIGCONT the stream reconnects and loses nothing.
func TestFaultMySQLFrozen(t *testing.T) {
	h := newHarness(t, 1, "")
	if h.srv.MySQL.External {
		t.Skip("needs a MariaDB of its own to stop")
	}
	h.cfg.MySQL.HeartbeatPeriod, h.cfg.MySQL.StallTimeout = 250*time.Millisecond, time.Second
	a := h.dbs[0]
	run := h.start()
	h.exec("CREATE TABLE "+a+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+a+".t VALUES (1, 1), (2, 2)")
	h.waitCaughtUp(run, 30*time.Second)
	var addr string
	waitFor(t, 30*time.Second, "metrics endpoint", func() bool { addr = run.r.MetricsAddr(); return addr != "" })
	waitFor(t, 30*time.Second, "ready", func() bool { code, _ := probe(t, addr, "/readyz"); return code == http.StatusOK })

	pid := h.srv.MySQL.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	// Twenty stall timeouts: a bound on a hang, not a measurement.
	waitFor(t, 20*time.Second, "/readyz 503 while MariaDB is frozen", func() bool {
		code, st := probe(t, addr, "/readyz")
		return code == http.StatusServiceUnavailable && !st.MySQL
	})
	if !strings.Contains(run.logs.String(), "no binlog event or heartbeat for 1s (mysql.stall_timeout") {
		t.Errorf("the stall was not named in the log:\n%s", tail(grepLines(run.logs.String(), "component=binlog", "reconnect", "stream"), 3000))
	}
	// The reader goes on (reconnect attempts) instead of hanging on the
	// dead connection's close: it checks in after the stall was noticed.
	before := run.r.live.CheckIn.Load()
	waitFor(t, 20*time.Second, "the reader checks in while MariaDB is frozen", func() bool { return run.r.live.CheckIn.Load() > before })
	if code, st := probe(t, addr, "/healthz"); code != http.StatusOK || !st.Alive {
		t.Errorf("/healthz while MariaDB is frozen: %d %+v", code, st)
	}
	resume()
	h.exec("INSERT INTO "+a+".t VALUES (3, 3)", "UPDATE "+a+".t SET v = 20 WHERE id = 2")
	h.waitCaughtUp(run, 60*time.Second)
	waitFor(t, 30*time.Second, "ready again", func() bool { code, _ := probe(t, addr, "/readyz"); return code == http.StatusOK })
	h.verifyEqual("t")
	t.Logf("reconnects:\n%s", grepLines(run.logs.String(), "reconnect"))
}

// grepLines keeps the lines holding any of the words.
func grepLines(s string, words ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
