package block

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/binlog2ch/binlog2ch/column"

	"github.com/binlog2ch/binlog2ch/chnative"
)

// NativeOK reports whether EncodeNative can write this block: every column
// type has a native encoder here, and the host is little-endian (fixed-width
// buffers are written as they lie in memory).
func (b *Block) NativeOK() bool {
	if b.native == nil {
		b.native = make([]column.NativeFn, len(b.cols))
		b.nativeOK = hostLittleEndian()
		for i, c := range b.cols {
			b.native[i] = column.Native(c, b.target.Columns[i].Type)
			if b.native[i] == nil {
				b.nativeOK = false
			}
		}
	}
	return b.nativeOK
}

// EncodeNative writes the block in the Native format: the block header,
// then each column's name, type and data. Call it only when NativeOK.
func (b *Block) EncodeNative(e *chnative.Encoder) error { return b.EncodeNativeRows(e, nil) }

// EncodeNativeRows is EncodeNative of the rows listed in sel only (every
// row when sel is nil): one shard's rows of a block, written without
// copying them into a block of their own. Once NativeOK has been called,
// several goroutines may encode one block at once.
func (b *Block) EncodeNativeRows(e *chnative.Encoder, sel []uint32) error {
	if !b.NativeOK() {
		return errors.New("schema: block has columns without a native encoder")
	}
	rows := b.Rows()
	if sel != nil {
		rows = len(sel)
	}
	e.StartBlock(len(b.cols), rows)
	for i, fn := range b.native {
		c := &b.target.Columns[i]
		e.Column(c.Name, c.Type.String())
		if err := fn(e, sel); err != nil {
			return fmt.Errorf("%s: column %s: %w", b.target.FullName(), c.Name, err)
		}
	}
	return nil
}

func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
