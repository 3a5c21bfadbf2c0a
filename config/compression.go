package config

import "fmt"

// Values of clickhouse.compression: how the inserts' blocks travel to
// ClickHouse, for the native inserter and clickhouse-go alike.
const (
	// CompressionAuto, the default: none for a ClickHouse on this host,
	// lz4 for any other, decided per connection as ClickHouse's own
	// client decides its compression.
	CompressionAuto = "auto"
	// CompressionLZ4: LZ4 frames, as ClickHouse's own clients send to a
	// remote server.
	CompressionLZ4 = "lz4"
	// CompressionZSTD: ZSTD frames, fewer bytes for more CPU, for a slow
	// or metered network.
	CompressionZSTD = "zstd"
	// CompressionNone: no compression at all (the query's flag off: no
	// frames, no checksums), for ClickHouse on the same host or a fast
	// LAN, where compressing costs more CPU than the bytes it saves.
	CompressionNone = "none"
	// CompressionLZ4Adaptive: LZ4 frames, but a frame whose first 64 KiB
	// LZ4 cannot shrink goes uncompressed without the rest being tried:
	// less of the daemon's CPU on blobs and high-entropy text, at the risk
	// of sending uncompressed a frame that would have shrunk past its
	// start (counted in binlog2ch_clickhouse_uncompressed_frames_total).
	CompressionLZ4Adaptive = "lz4-adaptive"
)

func (c *Config) validateCompression(d *decoder) {
	switch p := c.ClickHouse.Compression; p {
	case CompressionAuto, CompressionLZ4, CompressionZSTD, CompressionNone, CompressionLZ4Adaptive:
	default:
		d.problem("clickhouse.compression", fmt.Sprintf("want %s, %s, %s, %s or %s, got %q", CompressionAuto, CompressionLZ4, CompressionZSTD, CompressionNone, CompressionLZ4Adaptive, p))
	}
}
