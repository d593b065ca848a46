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
// header+key+value (zero padded). The shards share one backing array.
func Encode(key, value []byte, k, m int) ([][]byte, error) {
	codec, err := ec.New(k, m)
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	size := ShardSize(len(key), len(value), k)
	buf := make([]byte, size*(k+m))
	obj := buf[:0]
	obj = append(obj, magic)
	obj = binary.AppendUvarint(obj, uint64(len(key)))
	obj = binary.AppendUvarint(obj, uint64(len(value)))
	obj = append(obj, key...)
	_ = append(obj, value...)
	shards := make([][]byte, k+m)
	for i := range shards {
		shards[i] = buf[i*size : (i+1)*size : (i+1)*size]
	}
	if err := codec.Encode(shards); err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	return shards, nil
}

// Decode rebuilds missing data shards (nil or empty entries) from any k
// present ones and returns the value, checking that the object belongs to
// key. shards must have k+m entries; present ones must be equally sized.
func Decode(shards [][]byte, key []byte, k, m int) ([]byte, error) {
	codec, err := codecFor(shards, k, m)
	if err != nil {
		return nil, err
	}
	if err := codec.ReconstructData(shards); err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	return parse(bytes.Join(shards[:k], nil), key)
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
	return checkHeader(shards[:k], key)
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

// checkHeader checks that data shards start with a header for key whose
// value fits in them, reading only the shards that hold header and key.
func checkHeader(data [][]byte, key []byte) error {
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
		return ErrCorrupt
	}
	kl, n1 := binary.Uvarint(prefix[1:])
	if n1 <= 0 {
		return ErrCorrupt
	}
	vl, n2 := binary.Uvarint(prefix[1+n1:])
	if n2 <= 0 {
		return ErrCorrupt
	}
	body := prefix[1+n1+n2:]
	if kl != uint64(len(key)) || kl > uint64(len(body)) || !bytes.Equal(body[:kl], key) {
		return ErrCorrupt
	}
	if vl > uint64(total) || 1+n1+n2+int(kl)+int(vl) > total {
		return ErrCorrupt
	}
	return nil
}

func parse(obj, key []byte) ([]byte, error) {
	if len(obj) == 0 || obj[0] != magic {
		return nil, ErrCorrupt
	}
	r := obj[1:]
	kl, n1 := binary.Uvarint(r)
	if n1 <= 0 {
		return nil, ErrCorrupt
	}
	vl, n2 := binary.Uvarint(r[n1:])
	if n2 <= 0 {
		return nil, ErrCorrupt
	}
	body := r[n1+n2:]
	if kl > uint64(len(body)) || vl > uint64(len(body))-kl {
		return nil, ErrCorrupt
	}
	if !bytes.Equal(body[:kl], key) {
		return nil, ErrCorrupt
	}
	return body[kl : kl+vl : kl+vl], nil
}
