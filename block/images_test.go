package block

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestCountImages: full row images are counted with NULLs and
// length-prefixed values; a truncated image or an undecodable column type
// is an error.
func TestCountImages(t *testing.T) {
	types := []byte{mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_VARCHAR}
	meta := []uint16{0, 1020}
	rows := []byte{
		0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 'a', 'b', // (1, "ab")
		0b10, 2, 0, 0, 0, 0, 0, 0, 0, // (2, NULL)
		0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, // (3, "")
	}
	if n, err := CountImages(types, meta, rows); n != 3 || err != nil {
		t.Errorf("CountImages = %d, %v; want 3", n, err)
	}
	if _, err := CountImages(types, meta, rows[:len(rows)-1]); err == nil {
		t.Error("a truncated image was counted")
	}
	if _, err := CountImages([]byte{mysql.MYSQL_TYPE_JSON}, []uint16{4}, []byte{0, 1, 0, 0, 0, 'x'}); err == nil {
		t.Error("a JSON column was counted")
	}
}
