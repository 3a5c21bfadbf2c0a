package replicator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/binlog2ch/binlog2ch/gtid"
	"github.com/binlog2ch/binlog2ch/router"
	"github.com/binlog2ch/binlog2ch/schema"
	"github.com/binlog2ch/binlog2ch/snapshot"
	"github.com/binlog2ch/binlog2ch/source"
	"github.com/binlog2ch/binlog2ch/state"
)

// A change of binlog history: the checkpoint was saved on a binlog the
// server does not have. Either mysql.addr now names another server (a
// failover to a promoted replica, or a DNS name that moved), or the
// server's own binlog restarted (RESET MASTER, a rebuild from a backup).
// On another server, with GTIDs, the daemon finds its place: it checks the
// server has every transaction it read (else it names what is missing and
// the tables those may have changed), then reads by GTID; versions on the
// new history start at the checkpoint's version ceiling, above every
// version written before (docs/replication.md). A restarted binlog stops
// it: its GTIDs may have been numbered again.

// GTIDGapError: the server lacks transactions binlog2ch read from the old
// history; ClickHouse may hold their rows, which this server never had.
type GTIDGapError struct {
	Addr, Server string
	// Applied are missing transactions whose rows are all in ClickHouse
	// (before the checkpoint); Read, all those missing of what the reader
	// had read when the checkpoint was saved, when it had read more.
	Applied, Read []gtid.Gap
	Tables        []string // the replicated tables they may have changed
}

func (e *GTIDGapError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "MySQL %s (%s) lacks transactions binlog2ch read from the server it replicated before (a replica promoted before it had them all):", e.Addr, e.Server)
	if len(e.Applied) > 0 {
		fmt.Fprintf(&b, " applied to ClickHouse: %s;", gapsText(e.Applied))
	}
	if len(e.Read) > 0 {
		fmt.Fprintf(&b, " read (the rows of those after the checkpoint possibly in ClickHouse): %s;", gapsText(e.Read))
	}
	tables := "none of the replicated tables (no table record covers them)"
	if len(e.Tables) > 0 {
		tables = strings.Join(e.Tables, ", ")
	}
	fmt.Fprintf(&b, " tables they may have changed: %s. ClickHouse may hold rows this server never had. binlog2ch stops rather than go on from a history that contradicts what it applied. To repair: bring the missing transactions to this server if the old primary's binlog survives (replay them, then start binlog2ch again), or accept the new primary's data: `binlog2ch verify -config FILE` shows what differs, then %s (see docs/failover.md#failover-of-the-mysql-source)", tables, e.repair())
	return b.String()
}

// repair is the fullsync that accepts the new primary's data.
func (e *GTIDGapError) repair() string {
	all := "`binlog2ch fullsync -recreate -checkpoint -config FILE` copies every table from this server and moves the checkpoint to it"
	if len(e.Tables) == 0 {
		return all
	}
	return "`binlog2ch fullsync -recreate -checkpoint -tables " + strings.Join(e.Tables, ",") + " -config FILE` copies those tables from this server and lets binlog2ch go on from the transactions both servers hold (or, without -tables, " + strings.TrimPrefix(all, "`binlog2ch fullsync -recreate -checkpoint -config FILE` ") + ")"
}

func gapsText(gaps []gtid.Gap) string {
	parts := make([]string, len(gaps))
	for i, g := range gaps {
		parts[i] = g.Text
	}
	return strings.Join(parts, ", ")
}

// recopyOnThisServer is the way on when the checkpoint cannot be followed
// on this server's binlog.
const recopyOnThisServer = "To go on from this server's data: stop binlog2ch, run `binlog2ch fullsync -recreate -checkpoint -config FILE` (it copies every table into emptied tables and moves the checkpoint to this server), and start it again"

// changeOfHistory is where to read from when the checkpoint is of another
// server: by GTID, once the server is found to hold what binlog2ch read.
// (The same server's restarted binlog is not followed by GTID: RESET
// MASTER numbers them again; see streamError.)
func (r *Replicator) changeOfHistory(ctx context.Context, cp *state.Checkpoint) (source.Start, error) {
	var none source.Start
	what := fmt.Sprintf("the checkpoint in %s was saved on MySQL server %s at binlog %s, but %s is %s", r.checkpoints(), cp.Server, cp.Position, r.cfg.MySQL.Addr, r.server.ID)
	if cp.GTID == "" {
		return none, fmt.Errorf("%s. The checkpoint holds no GTID set (the server wrote none: MySQL with gtid_mode OFF, or binlog2ch saved it before it kept GTIDs), so binlog2ch cannot find its place in this binlog. Point mysql.addr back at %s if that is the server meant. %s", what, cp.Server, recopyOnThisServer)
	}
	want, err := gtid.Parse(r.server.Flavor, cp.GTID)
	if err != nil {
		return none, fmt.Errorf("%s, and the checkpoint's GTIDs do not read as %s's: %w. %s", what, r.server.Flavor, err, recopyOnThisServer)
	}
	read := want
	if cp.ReadGTID != "" {
		if read, err = gtid.Parse(r.server.Flavor, cp.ReadGTID); err != nil {
			return none, fmt.Errorf("the checkpoint's read GTIDs: %w", err)
		}
	}
	have, err := source.ExecutedGTIDs(ctx, r.my, r.server.Flavor)
	if err != nil {
		return none, err
	}
	if !want.Shares(have) {
		return none, fmt.Errorf("%s, whose binlog has no transaction from the checkpoint's GTID origins (%s; the server has %q): it is not a replica of the server binlog2ch followed. Point mysql.addr at the right server. %s", what, cp.GTID, have.String(), recopyOnThisServer)
	}
	if gaps := read.Missing(have); len(gaps) > 0 {
		e := &GTIDGapError{Addr: r.cfg.MySQL.Addr, Server: r.server.ID, Applied: want.Missing(have), Tables: cp.TableGTIDs.Affected(gaps)}
		if cp.ReadGTID != cp.GTID {
			e.Read = gaps
		}
		return none, e
	}
	purged, err := source.PurgedGTIDs(ctx, r.my, r.server.Flavor)
	if err != nil {
		return none, err
	}
	if gaps := purged.Missing(want); len(gaps) > 0 {
		return none, fmt.Errorf("%s, and the server purged from its binlog transactions binlog2ch has not read: %s. Their changes are lost to replication. %s", what, gapsText(gaps), recopyOnThisServer)
	}
	if cp.Ceiling == 0 {
		return none, fmt.Errorf("%s, and the checkpoint has no version ceiling, so versions on the new history could fall below those written. %s", what, recopyOnThisServer)
	}
	r.log.Warn("the binlog history changed: following the server from the checkpoint's GTIDs; its changes get versions above every one written before",
		"reason", what, "gtid", cp.GTID, "server_gtid", have.String(), "version_ceiling", cp.Ceiling)
	return source.Start{Position: cp.Position, GTID: cp.GTID, ByGTID: true, Ceiling: cp.Ceiling, TableGTIDs: cp.TableGTIDs}, nil
}

// gapRepair is how `fullsync -recreate -checkpoint -tables` repairs a GTID
// gap: the tables the missing transactions may have changed are copied
// from the new server at its position P, and run reads on by GTID from
// what both servers hold (resume), on a new history whose offset puts
// every file of the new server at or above the old checkpoint's version
// ceiling. Those tables' events up to P then lose to the copy, the later
// ones win; the other tables take every event from resume on, all with
// versions above those written before.
type gapRepair struct {
	resume  gtid.Set
	offset  int64
	ceiling uint32
	touched gtid.Tables
}

// planGapRepair checks that run's checkpoint has a GTID gap on this server
// that only tables among those listed may be affected by.
func (r *Replicator) planGapRepair(ctx context.Context, tables []schema.TableName) (*gapRepair, error) {
	cp, err := r.checkpoints().Load(ctx)
	if err != nil {
		return nil, err
	}
	const what = "-checkpoint with -tables repairs a GTID gap after a failover (a copy of every table, without -tables, moves the checkpoint in any case)"
	if cp == nil || cp.Server == r.server.ID {
		return nil, fmt.Errorf("%s: run's checkpoint in %s is not of another server", what, r.checkpoints())
	}
	_, err = r.changeOfHistory(ctx, cp)
	var gap *GTIDGapError
	switch {
	case err == nil:
		return nil, fmt.Errorf("%s: this server has every transaction run's checkpoint holds; start `binlog2ch run`, it follows the failover by itself", what)
	case !errors.As(err, &gap):
		return nil, err
	}
	listed := map[string]bool{}
	for _, t := range tables {
		listed[t.String()] = true
	}
	var more []string
	for _, t := range gap.Tables {
		if !listed[t] {
			more = append(more, t)
		}
	}
	if len(more) > 0 {
		return nil, fmt.Errorf("%s: the missing transactions may have changed %s too; copy them as well: -tables %s", what, strings.Join(more, ", "), strings.Join(gap.Tables, ","))
	}
	if len(gap.Tables) == 0 {
		return nil, fmt.Errorf("%s: binlog2ch has no record of the tables the missing transactions changed; copy every table (without -tables)", what)
	}
	want, err := gtid.Parse(r.server.Flavor, cp.GTID)
	if err != nil {
		return nil, err
	}
	have, err := source.ExecutedGTIDs(ctx, r.my, r.server.Flavor)
	if err != nil {
		return nil, err
	}
	resume, ok := want.Within(have)
	if !ok {
		return nil, fmt.Errorf("%s: this server holds none of the checkpoint's GTIDs %s of some origin; copy every table (without -tables)", what, cp.GTID)
	}
	oldest, err := source.OldestBinlogFile(ctx, r.my)
	if err != nil {
		return nil, err
	}
	idx, err := source.FileIndex(oldest)
	if err != nil {
		return nil, err
	}
	rp := &gapRepair{resume: resume, offset: int64(cp.Ceiling) - int64(idx), ceiling: cp.Ceiling, touched: cp.TableGTIDs}
	r.log.Warn("repairing a GTID gap: copying the tables the missing transactions may have changed from this server; run then reads on from the transactions both servers hold",
		"missing", gapsText(append(gap.Applied, gap.Read...)), "tables", strings.Join(gap.Tables, ","), "resume_gtid", resume.String())
	return rp, nil
}

// saveRepairedCheckpoint points run at the repaired history: by GTID from
// the transactions both servers hold.
func (r *Replicator) saveRepairedCheckpoint(st *snapshot.State, rp *gapRepair) error {
	if err := os.Remove(filepath.Join(r.cfg.StateDir, snapshot.InitialFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the initial snapshot's state: %w", err)
	}
	f, _ := source.VersionFile(source.MustFileIndex(st.Position.File), rp.offset)
	cp := state.Checkpoint{Position: st.Position, Server: r.server.ID, SavedAt: time.Now().UTC(), StreamState: state.StreamState{
		GTID: rp.resume.String(), Offset: rp.offset, Ceiling: max(rp.ceiling, f+router.CeilingGap), TableGTIDs: rp.touched, ResumeByGTID: true}}
	if err := r.checkpoints().Save(context.Background(), cp); err != nil {
		return err
	}
	r.log.Warn("run's checkpoint moved to this server: run reads on from its GTIDs", "gtid", cp.GTID, "copy_position", st.Position.String())
	return nil
}
