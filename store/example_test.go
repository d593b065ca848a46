package store_test

import (
	"fmt"

	"github.com/memgest/memgest/store"
)

func Example() {
	s := store.New()
	key := []byte("user:1")
	_ = s.Put(key, []byte("alice"), store.Meta{Version: 1})

	// A replica message carrying an older version does not roll it back.
	applied, _ := s.PutIfNewer(key, []byte("stale"), store.Meta{Version: 0})
	val, m, ok := s.Get(key, nil)
	fmt.Println(applied, string(val), m.Version, ok)

	// Expiry is data: the store reports due records, the caller deletes them
	// if they are unchanged.
	s.UpdateMeta(key, func(m *store.Meta) bool { m.ExpireAt = 1000; return true })
	s.SampleExpired(2000, 10, func(k []byte, seen store.Meta) {
		s.DeleteIf(k, func(cur store.Meta) bool { return cur == seen })
	})
	fmt.Println(s.Len())
	// Output:
	// false alice 1 true
	// 0
}

func ExampleStore_Scan() {
	s := store.New()
	for i := range 5 {
		_ = s.Put([]byte(fmt.Sprint("k", i)), nil, store.Meta{})
	}
	n := 0
	for c := s.Scan(0, 2, func([]byte, store.Meta) bool { n++; return true }); c != 0; {
		c = s.Scan(c, 2, func([]byte, store.Meta) bool { n++; return true })
	}
	fmt.Println(n)
	// Output: 5
}
