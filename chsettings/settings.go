// Package chsettings is the settings binlog2ch's inserts carry, chosen per
// ClickHouse server: which ones a server knows (read from system.settings
// through the caller's connection), which of them go with inserts into a
// server of a given version, and the deduplication tokens of a batch's
// parts. It never opens a connection itself and never sends an insert:
// the sink does both, with what this package chose.
package chsettings

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/schema"
)

// The settings that go with binlog2ch's inserts are chosen from the server
// at start, never assumed: the native inserter speaks a protocol revision
// at which settings travel in the old binary format, where a setting the
// server does not know desynchronises the query packet (chnative's
// revSettingsAsStrings), and a server of another age may lack a setting
// or have it under another type.

// insertSetting is a setting binlog2ch sends with its inserts wherever the
// server has it.
type insertSetting struct {
	name  string
	value uint64
	// since is the first ClickHouse version (major, minor) that has the
	// setting. The servers' list is read from the configured server; a
	// cluster's shards, which the native inserts may reach directly, can
	// be of another version, told by their hello.
	since [2]uint64
	// cluster: only with clickhouse.cluster.
	cluster bool
}

var insertSettings = []insertSetting{
	// ClickHouse 26.3 turned async_insert on by default (ClickHouse PR
	// #97590, backported to 26.2.4). The server would then queue each
	// batch to merge it with others: binlog2ch batches by itself, and a
	// batch must be in the table when its insert returns for the
	// checkpoint to pass it (with wait_for_async_insert=0 it would not
	// be). A table's own MergeTree setting async_insert=1 still wins; the
	// tables binlog2ch creates do not have it.
	{name: "async_insert", value: 0, since: [2]uint64{21, 11}},
	// In a cluster, blocks that go into the Distributed table go
	// synchronously: the insert returns once every shard has stored its
	// rows, so the checkpoint never passes rows still queued on the server
	// we talk to (the asynchronous default), which its loss would lose.
	// Inserts into the shards' local tables ignore it. The old name, an
	// alias of distributed_foreground_insert since that was added, is the
	// one every version knows.
	{name: "insert_distributed_sync", value: 1, cluster: true},
	// A data block whose columns differ from the table's is refused, not
	// adapted: from 22.6 a current server drops a column the table lacks
	// (input_format_skip_unknown_fields on by default), and from 23.3 it
	// casts a column of another type (input_format_native_allow_types_
	// conversion), where 18.16 refuses both. binlog2ch checks the header
	// the server sends itself (sink's checkHeader); these make the server
	// refuse what slipped past that, rather than store it changed.
	{name: "input_format_skip_unknown_fields", value: 0, since: [2]uint64{22, 6}},
	{name: "input_format_native_allow_types_conversion", value: 0, since: [2]uint64{23, 3}},
	// An INSERT's blocks are squashed until they reach either minimum,
	// then stored as a part. The sink's streams (several batches in one
	// INSERT, sink/stream.go) stay under their own bounds, below these:
	// the server stores each stream as one part when its data ends, and
	// none of it when the sink aborts it (chnative.Stream). A single block
	// is stored as it is whatever these are.
	{name: MinRowsName, value: 1 << 30},
	{name: MinBytesName, value: 1 << 40},
}

// The squashing minimums (insertSettings); a server that lacks either gets
// an INSERT per batch.
const (
	MinRowsName  = "min_insert_block_size_rows"
	MinBytesName = "min_insert_block_size_bytes"
)

// Known are the settings a server knows, by name, with the type
// system.settings gives them ("" from servers whose system.settings has no
// type column, such as 18.16: theirs are typed by the old names, and the
// ones binlog2ch sends are all integers there).
type Known map[string]string

// Read asks the server which of the settings binlog2ch may send it knows,
// and their types.
func Read(ctx context.Context, conn driver.Conn) (Known, error) {
	names := []string{schema.QuoteString(TokenName)}
	for _, s := range insertSettings {
		names = append(names, schema.QuoteString(s.name))
	}
	var typed uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = 'system' AND table = 'settings' AND name = 'type'").Scan(&typed); err != nil {
		return nil, fmt.Errorf("ClickHouse: read system.columns: %w", err)
	}
	typ := "''"
	if typed > 0 {
		typ = "type"
	}
	rows, err := conn.Query(ctx, "SELECT name, "+typ+" FROM system.settings WHERE name IN ("+strings.Join(names, ", ")+")")
	if err != nil {
		return nil, fmt.Errorf("ClickHouse: read system.settings: %w", err)
	}
	defer rows.Close()
	known := Known{}
	for rows.Next() {
		var name, t string
		if err := rows.Scan(&name, &t); err != nil {
			return nil, fmt.Errorf("ClickHouse: read system.settings: %w", err)
		}
		known[name] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ClickHouse: read system.settings: %w", err)
	}
	return known, nil
}

// varint reports whether a setting of type typ travels as a varint in the
// old binary format (SettingFieldNumber of an unsigned integer or bool):
// the only values chnative sends. A setting of another type (Int64 is a
// zigzag varint, floats and strings are strings) is not sent.
func varint(typ string) bool {
	switch typ {
	case "", "Bool", "UInt64":
		return true
	}
	return false
}

// Choose is what goes with inserts into a server of version major.minor
// that knows the settings known: each insertSetting it has, of a type sent
// as a varint, cluster ones only in a cluster.
func Choose(known Known, cluster bool, major, minor uint64) []chnative.Setting {
	var out []chnative.Setting
	for _, s := range insertSettings {
		typ, ok := known[s.name]
		if !ok || !varint(typ) || s.cluster && !cluster ||
			major < s.since[0] || major == s.since[0] && minor < s.since[1] {
			continue
		}
		out = append(out, chnative.Setting{Name: s.name, Value: s.value})
	}
	return out
}

// A batch of binlog rows is a function of its binlog range: sent again
// after a crash, a retry or a fallback with the same cuts, it is the same
// block, and a token naming the range lets the server drop it.
// insert_deduplication_token came in 22.2 (Settings.h: "If not empty, used
// for duplicate detection instead of data digest"). The sinks suffix it
// with the block's ordinal in the insert (MergeTreeSink, ReplicatedMergeTreeSink:
// "{token}_{seqnum}"; InsertBlockIDGenerator in current servers) and
// prefix the partition id (getZeroLevelPartBlockID), so the same insert
// sent again has the same block ids per partition. Replicated tables keep
// replicated_deduplication_window ids (100, 1000 from 23.11, ClickHouse
// #57335); plain MergeTree only non_replicated_deduplication_window's,
// 0 by default (MergeTreeSettings), which binlog2ch's CREATE sets
// (schema.DedupWindow). Without the token (18.16) Replicated tables drop
// byte-identical blocks by their hash alone.
const (
	TokenName  = "insert_deduplication_token"
	tokenMajor = 22
	tokenMinor = 2
)

// TokenKnown reports whether a server of version major.minor that knows
// the settings known takes the token: listed as a String, from 22.2.
func TokenKnown(known Known, major, minor uint64) bool {
	return known[TokenName] == "String" && (major > tokenMajor || major == tokenMajor && minor >= tokenMinor)
}

// PartToken is the token of the rows sel of a block of token t, sent to one
// shard: the selection's count and hash are in it, so that a replay cut
// by another cluster layout, whose part for that shard holds other rows,
// never passes for the part stored before.
func PartToken(t string, sel []uint32) string {
	if t == "" || sel == nil {
		return t
	}
	h := fnv.New64a()
	var buf [4]byte
	for _, r := range sel {
		binary.LittleEndian.PutUint32(buf[:], r)
		h.Write(buf[:])
	}
	return fmt.Sprintf("%s/%d:%016x", t, len(sel), h.Sum64())
}
