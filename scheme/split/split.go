// Package split cuts one object (a small header, the key and the value) into
// k data shards and m Reed-Solomon parity shards, and joins any k of them
// back (DESIGN.md §2, KVMD "splitting"). It is pure: the coordinator decides
// where shards live and carries them.
package split

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/memgest/memgest/ec"
	"github.com/memgest/memgest/internal/bigcopy"
)

// magic starts every object header so that a shard set from another object
// or a corrupted first shard is detected before any length is trusted.
const magic = 0xA7

// ErrCorrupt is returned when joined shards do not hold a well-formed object
// for the expected key.
var ErrCorrupt = errors.New("split: shards do not form the object")

// ShardSize is the size of each of the k+m shards for a key and value.
func ShardSize(keyLen, valueLen, k int) int {
	n := headerLen(keyLen, valueLen) + keyLen + valueLen
	return (n + k - 1) / k
}

func headerLen(keyLen, valueLen int) int {
	var tmp [binary.MaxVarintLen64]byte
	return 1 + binary.PutUvarint(tmp[:], uint64(keyLen)) + binary.PutUvarint(tmp[:], uint64(valueLen))
}

// Encode returns k data shards and m parity shards of equal size holding
// header+key+value (zero padded). Each shard has an array of its own, so
// that a node keeping one keeps no more; the value is copied into them in
// bounded steps (internal/bigcopy: a 512 MiB memmove stalled its whole
// process).
func Encode(key, value []byte, k, m int) ([][]byte, error) {
	codec, err := ec.New(k, m)
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	size := ShardSize(len(key), len(value), k)
	head := append([]byte{magic}, binary.AppendUvarint(nil, uint64(len(key)))...)
	head = append(binary.AppendUvarint(head, uint64(len(value))), key...)
	shards := make([][]byte, k+m)
	for i := range shards {
		shards[i] = make([]byte, size)
	}
	scatter(shards[:k], 0, head)
	scatter(shards[:k], len(head), value)
	if err := codec.Encode(shards); err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	return shards, nil
}

// scatter copies src into the data shards, which hold the object back to
// back, from byte off of the object on, in steps (internal/bigcopy).
func scatter(data [][]byte, off int, src []byte) {
	size := len(data[0])
	bigcopy.Steps(len(src), func(lo, hi int) {
		for at := off + lo; lo < hi; at = off + lo {
			lo += copy(data[at/size][at%size:], src[lo:hi])
		}
	})
}

// gather copies len(dst) bytes of the object from byte off of the data
// shards into dst, in steps.
func gather(dst []byte, data [][]byte, off int) {
	size := len(data[0])
	bigcopy.Steps(len(dst), func(lo, hi int) {
		for at := off + lo; lo < hi; at = off + lo {
			lo += copy(dst[lo:hi], data[at/size][at%size:])
		}
	})
}

// Decode reconstructs the object from any k of the k+m shards (missing
// shards are nil or empty) and returns its value, checking that the object
// belongs to key.
func Decode(shards [][]byte, key []byte, k, m int) ([]byte, error) {
	codec, err := codecFor(shards, k, m)
	if err != nil {
		return nil, err
	}
	if err := codec.ReconstructData(shards); err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	start, vlen, err := header(shards[:k], key)
	if err != nil {
		return nil, err
	}
	value := make([]byte, vlen)
	gather(value, shards[:k], start)
	return value, nil
}

// Rebuild fills in every missing shard (nil or empty entry), data and
// parity, from any k present ones, in place, and checks that the shards hold
// an object of key. It is the rebuild path: it neither joins the value nor
// encodes again.
func Rebuild(shards [][]byte, key []byte, k, m int) error {
	codec, err := codecFor(shards, k, m)
	if err != nil {
		return err
	}
	if err := codec.Reconstruct(shards); err != nil {
		return fmt.Errorf("split: %w", err)
	}
	_, _, err = header(shards[:k], key)
	return err
}

// codecFor returns the RS(k, m) codec for a set of k+m shards.
func codecFor(shards [][]byte, k, m int) (*ec.Codec, error) {
	if len(shards) != k+m {
		return nil, fmt.Errorf("split: got %d shards, want %d", len(shards), k+m)
	}
	codec, err := ec.New(k, m)
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	return codec, nil
}

// header checks that data shards start with a header for key whose value
// fits in them, reading only the shards that hold header and key, and
// returns where the value starts in the object and its length.
func header(data [][]byte, key []byte) (start, vlen int, err error) {
	total := len(data) * len(data[0])
	need := 1 + 2*binary.MaxVarintLen64 + len(key)
	var prefix []byte
	for _, s := range data {
		if len(prefix) >= need {
			break
		}
		prefix = append(prefix, s[:min(len(s), need-len(prefix))]...)
	}
	if len(prefix) == 0 || prefix[0] != magic {
		return 0, 0, ErrCorrupt
	}
	kl, n1 := binary.Uvarint(prefix[1:])
	if n1 <= 0 {
		return 0, 0, ErrCorrupt
	}
	vl, n2 := binary.Uvarint(prefix[1+n1:])
	if n2 <= 0 {
		return 0, 0, ErrCorrupt
	}
	body := prefix[1+n1+n2:]
	if kl != uint64(len(key)) || kl > uint64(len(body)) || !bytes.Equal(body[:kl], key) {
		return 0, 0, ErrCorrupt
	}
	if vl > uint64(total) || 1+n1+n2+int(kl)+int(vl) > total {
		return 0, 0, ErrCorrupt
	}
	return 1 + n1 + n2 + int(kl), int(vl), nil
}
