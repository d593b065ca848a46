package store

import "testing"

func TestExchangeReturnsWhatItComparedWith(t *testing.T) {
	s := New()
	k := []byte("k")
	applied, prev, existed, err := s.Exchange(k, []byte("a"), Meta{Version: 5, Scheme: 2, Aux: 9})
	if err != nil || !applied || existed || prev != (Meta{}) {
		t.Fatalf("insert: %v %+v %v %v", applied, prev, existed, err)
	}
	applied, prev, existed, _ = s.Exchange(k, []byte("b"), Meta{Version: 4})
	if applied || !existed || prev.Version != 5 || prev.Scheme != 2 || prev.Aux != 9 {
		t.Fatalf("older version: %v %+v %v", applied, prev, existed)
	}
	applied, prev, existed, _ = s.Exchange(k, []byte("ccc"), Meta{Version: 6, Scheme: 3})
	if !applied || !existed || prev.Version != 5 {
		t.Fatalf("newer version: %v %+v %v", applied, prev, existed)
	}
	v, m, ok := s.Get(k, nil)
	if !ok || string(v) != "ccc" || m.Version != 6 || m.Scheme != 3 {
		t.Fatalf("after exchange: %q %+v %v", v, m, ok)
	}
	if st := s.Stats(); st.Keys != 1 || st.ValueBytes != 3 || st.ByScheme[3].Keys != 1 || st.ByScheme[2].Keys != 0 {
		t.Fatalf("stats after exchange: %+v", st)
	}
	if _, _, _, err := s.Exchange(make([]byte, MaxKeySize+1), nil, Meta{}); err == nil {
		t.Fatal("oversize key accepted")
	}
}

func TestExchangeIfStoresOnlyWhatItsGuardAccepts(t *testing.T) {
	s := New()
	k := []byte("k")
	sameScheme := func(prev Meta, existed bool) bool { return !existed || prev.Scheme == 2 }
	if applied, _, existed, err := s.ExchangeIf(k, []byte("a"), Meta{Version: 1, Scheme: 2}, sameScheme); !applied || existed || err != nil {
		t.Fatalf("insert: %v %v %v", applied, existed, err)
	}
	if applied, prev, existed, _ := s.ExchangeIf(k, []byte("bb"), Meta{Version: 2, Scheme: 2}, sameScheme); !applied || !existed || prev.Version != 1 {
		t.Fatalf("replace: %v %+v %v", applied, prev, existed)
	}
	if err := s.Put(k, []byte("c"), Meta{Version: 3, Scheme: 5}); err != nil {
		t.Fatal(err)
	}
	applied, prev, existed, err := s.ExchangeIf(k, []byte("dddd"), Meta{Version: 4, Scheme: 2}, sameScheme)
	if applied || !existed || prev.Scheme != 5 || prev.Version != 3 || err != nil {
		t.Fatalf("refused by the guard: %v %+v %v %v", applied, prev, existed, err)
	}
	if v, m, _ := s.Get(k, nil); string(v) != "c" || m.Version != 3 {
		t.Fatalf("a refused exchange changed the record: %q %+v", v, m)
	}
	if st := s.Stats(); st.Keys != 1 || st.ValueBytes != 1 {
		t.Fatalf("stats after a refused exchange: %+v", st)
	}
}
