package binlog

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// FileStart is what a binlog file's format description event says of
// when the server began the file.
type FileStart struct {
	// At is the event's timestamp: when the server opened the file (in
	// seconds, as the binlog holds it).
	At time.Time
	// AtServerStart: the server opened the file as it started (the event's
	// created field is set only then), so the file before it was closed
	// by a shutdown or a crash, possibly long before.
	AtServerStart bool
}

// ReadFileStart reads the format description event at the start of a
// binlog file over a dump connection of its own, and closes it. The dump
// is mysqlbinlog's: server id 0 and BINLOG_DUMP_NON_BLOCK, without
// COM_REGISTER_SLAVE, so that no replica of the server's, binlog2ch's
// own stream included, is taken for a zombie of the same id and
// disconnected; a fresh replica uuid keeps MySQL from matching another.
func ReadFileStart(ctx context.Context, cfg Config, file string) (FileStart, error) {
	conn, _, err := connect(ctx, cfg)
	if err != nil {
		return FileStart{}, err
	}
	defer conn.Close()
	// The reads below wait at most StallTimeout each; ctx ends them too.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if _, err := conn.Execute("SET @master_binlog_checksum='NONE', @source_binlog_checksum='NONE'"); err != nil {
		return FileStart{}, err
	}
	id := uuid.NewString()
	if _, err := conn.Execute(fmt.Sprintf("SET @slave_uuid = '%s', @replica_uuid = '%s'", id, id)); err != nil {
		return FileStart{}, err
	}
	cmd := []byte{0, 0, 0, 0, mysql.COM_BINLOG_DUMP}
	cmd = binary.LittleEndian.AppendUint32(cmd, 4)
	cmd = binary.LittleEndian.AppendUint16(cmd, replication.BINLOG_DUMP_NON_BLOCK)
	cmd = binary.LittleEndian.AppendUint32(cmd, 0)
	cmd = append(cmd, file...)
	conn.ResetSequence()
	if err := conn.WritePacket(cmd); err != nil {
		return FileStart{}, err
	}
	parser := replication.NewBinlogParser()
	parser.SetFlavor(cfg.Flavor)
	// The server sends a fake ROTATE_EVENT first (MariaDB also a
	// GTID_LIST or BINLOG_CHECKPOINT may follow the description): the
	// description is among the first few events.
	for range 4 {
		data, err := conn.ReadPacket()
		if err != nil {
			return FileStart{}, fmt.Errorf("reading the start of binlog file %s: %w", file, err)
		}
		switch data[0] {
		case mysql.OK_HEADER:
		case mysql.ERR_HEADER:
			return FileStart{}, fmt.Errorf("reading the start of binlog file %s: %w", file, conn.HandleErrorPacket(data))
		case mysql.EOF_HEADER:
			return FileStart{}, fmt.Errorf("binlog file %s: the server sent no format description event", file)
		}
		ev, err := parser.Parse(data[1:])
		if err != nil {
			return FileStart{}, fmt.Errorf("binlog file %s: %w", file, err)
		}
		if fd, ok := ev.Event.(*replication.FormatDescriptionEvent); ok {
			return FileStart{At: time.Unix(int64(ev.Header.Timestamp), 0), AtServerStart: fd.CreateTimestamp != 0}, nil
		}
	}
	return FileStart{}, fmt.Errorf("binlog file %s: no format description event among its first events", file)
}
