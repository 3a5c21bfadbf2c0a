package sink

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/binlog2ch/binlog2ch/chnative"
	"github.com/binlog2ch/binlog2ch/chsettings"
)

// The settings themselves, which ones a server knows and which go to it,
// and why a batch carries a deduplication token, are chsettings's; what
// is here sends them: the native connections' and clickhouse-go's
// settings, and the batches' tokens.

// batchToken is the token of a sent block of binlog rows: the table, its
// first and last _version and its row count, so that two different
// batches never share one. A table copy's rows all have the copy's
// version, which names no range: those blocks get none ("").
func batchToken(job *sendJob) string {
	b := job.block
	first, last, ok := b.VersionSpan()
	if job.copied || !ok {
		return ""
	}
	return fmt.Sprintf("binlog2ch:%s:%d-%d:%d", b.Target().FullName(), first, last, b.Rows())
}

// nativeSettings chooses the settings of a native connection from its
// server's hello.
func (c *ClickHouse) nativeSettings(s chnative.Server) []chnative.Setting {
	return chsettings.Choose(c.settings, c.cfg.ClickHouse.Cluster != "", s.Major, s.Minor)
}

// InsertSettings are the settings binlog2ch's clickhouse-go inserts take
// on the configured servers (a copy), for other inserts such as the
// checkpoint store's.
func (c *ClickHouse) InsertSettings() clickhouse.Settings {
	out := clickhouse.Settings{}
	for k, v := range c.driverSettings {
		out[k] = v
	}
	return out
}

// driverContext adds the insert settings to the context of a clickhouse-go
// insert into the configured servers, the ones whose settings were read,
// with the batch's token where they take it and the insert goes into the
// table itself: a Distributed table would pass one token to every shard
// with rows its layout chose, and a replay under another layout would be
// dropped as the part stored before (chsettings.PartToken). clickhouse-go
// sends them as strings to current servers, and as varints (the old
// format) to those below the strings revision, like chnative.
func (c *ClickHouse) driverContext(ctx context.Context, token string) context.Context {
	if token == "" || !c.driverToken || c.cfg.ClickHouse.Cluster != "" {
		if len(c.driverSettings) == 0 {
			return ctx
		}
		return clickhouse.Context(ctx, clickhouse.WithSettings(c.driverSettings))
	}
	s := c.InsertSettings()
	s[chsettings.TokenName] = token
	return clickhouse.Context(ctx, clickhouse.WithSettings(s))
}

// useSettings records the server's settings and chooses those of the
// clickhouse-go inserts; the native ones are chosen per connection.
func (c *ClickHouse) useSettings(known chsettings.Known) {
	c.settings = known
	c.driverSettings = clickhouse.Settings{}
	// The configured servers' version is the one the settings came from:
	// every setting they list applies from its version on.
	major, minor := ^uint64(0), uint64(0)
	if v := strings.SplitN(c.caps.Version, ".", 3); len(v) >= 2 {
		if a, err := strconv.ParseUint(v[0], 10, 64); err == nil {
			if b, err := strconv.ParseUint(v[1], 10, 64); err == nil {
				major, minor = a, b
			}
		}
	}
	for _, s := range chsettings.Choose(known, c.cfg.ClickHouse.Cluster != "", major, minor) {
		c.driverSettings[s.Name] = int(s.Value)
	}
	c.driverToken = chsettings.TokenKnown(known, major, minor)
	_, rowsOK := c.driverSettings[chsettings.MinRowsName]
	_, bytesOK := c.driverSettings[chsettings.MinBytesName]
	c.streamOK = rowsOK && bytesOK
	c.ins.TokenOK = func(s chnative.Server) bool { return chsettings.TokenKnown(c.settings, s.Major, s.Minor) }
	if c.cfg.ClickHouse.Cluster != "" {
		if _, ok := c.driverSettings["insert_distributed_sync"]; !ok {
			c.log.Warn("ClickHouse does not know insert_distributed_sync: inserts into a Distributed table may return before the shards have the rows, and a server lost then loses them",
				"cluster", c.cfg.ClickHouse.Cluster)
		}
	}
	var sent []string
	for name, v := range c.driverSettings {
		sent = append(sent, fmt.Sprintf("%s=%v", name, v))
	}
	slices.Sort(sent)
	c.log.Debug("settings sent with inserts", "settings", strings.Join(sent, ","), "server_settings", fmt.Sprint(known))
}
