package store

import (
	"bytes"
	"testing"
)

// FuzzStoreOps decodes a sequence of operations from the input, 4 bytes
// each, and runs them on a store with tiny segments (so the cleaner and
// table resizes run constantly) and on the model; any disagreement or broken
// invariant fails.
//
//	byte 0  operation (low 3 bits) and which meta fields to set (high bits)
//	byte 1  key: one of 24, the empty key and a MaxKeySize key among them
//	byte 2  value size: 0-251 bytes, or one of 4 sizes around the inline limit
//	byte 3  version, DeleteIf bound or UpdateMeta edit
func FuzzStoreOps(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 1, 5, 0, 0, 0, 1, 0, 3, 0, 2, 0, 0, 0})
	f.Add(bytes.Repeat([]byte{0, 3, 9, 7, 1, 3, 10, 8, 4, 3, 0, 1, 3, 3, 0, 9}, 8))
	f.Add(bytes.Repeat([]byte{0x80, 1, 0xff, 2, 0x40, 2, 0xfe, 3, 2, 1, 0, 0, 0x20, 5, 0xfd, 1}, 4))
	keys := make([][]byte, 24)
	for i := range keys {
		keys[i] = keyFor("", i)
	}
	val := bytes.Repeat([]byte("0123456789abcdef"), (MaxInlineRecord+200)/16)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, mdl := New(WithShards(2), withMinSegment(64)), model{}
		data = data[:min(len(data), 4*maxFuzzOps)]
		for len(data) >= 4 {
			decodeOp(data, keys, val).run(t, s, mdl)
			data = data[4:]
		}
		checkAll(t, s, mdl)
	})
}

// maxFuzzOps caps one input: longer ones reach no new states, and the
// fuzzer minimizes each new input for up to a minute by re-running it.
const maxFuzzOps = 256

func decodeOp(b []byte, keys [][]byte, val []byte) op {
	o := op{kind: opKind(b[0]&7) % opKinds, key: keys[int(b[1])%len(keys)], arg: uint64(b[3])}
	size := int(b[2])
	if size >= 0xfc { // 4 sizes around the inline limit
		size = MaxInlineRecord - 40 + (size-0xfc)*24
	}
	o.val = val[b[3]%16 : int(b[3]%16)+size]
	o.m = Meta{Version: uint64(b[3]) << (b[0] >> 6 * 20)}
	if b[0]&0x08 != 0 {
		o.m.ExpireAt = int64(b[3]) - 100
	}
	if b[0]&0x10 != 0 {
		o.m.Scheme, o.m.Flags = uint16(b[2]), b[1]
	}
	if b[0]&0x20 != 0 {
		o.m.Aux = uint32(b[2]) << 20
	}
	return o
}
