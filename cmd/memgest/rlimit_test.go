package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestFitClients checks maxclients against open-file limits as Redis's
// adjustOpenFilesLimit does: kept when the limit covers it or can be
// raised, lowered to the limit less the reserve when it cannot, refused
// when nothing is left for clients.
func TestFitClients(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name          string
		cur, max, cap uint64 // cap: the highest limit raise may set
		want, fit     int
		err           string
	}{
		{name: "covered", cur: 20000, max: 20000, cap: 20000, want: 10000, fit: 10000},
		{name: "raised", cur: 1024, max: 1024, cap: 1 << 20, want: 10000, fit: 10000},
		{name: "hard limit", cur: 1024, max: 4096, cap: 4096, want: 10000, fit: 4096 - reservedFDs},
		{name: "lowered", cur: 1024, max: 1024, cap: 1024, want: 10000, fit: 1024 - reservedFDs},
		{name: "no room", cur: 100, max: 100, cap: 100, want: 10, err: "leaves no room for clients"},
	} {
		var set uint64
		raise := func(to uint64) error {
			if to > tc.cap {
				return errors.New("operation not permitted")
			}
			set = to
			return nil
		}
		fit, err := fitClients(tc.want, fdLimit{cur: tc.cur, max: tc.max, raise: raise}, log)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %d, %v; want an error with %q", tc.name, fit, err, tc.err)
			}
			continue
		}
		if err != nil || fit != tc.fit {
			t.Errorf("%s: got %d, %v; want %d", tc.name, fit, err, tc.fit)
		}
		if tc.cur < uint64(tc.want)+reservedFDs && fit == tc.want && set < uint64(tc.want)+reservedFDs {
			t.Errorf("%s: kept maxclients %d with the limit at %d", tc.name, fit, set)
		}
	}
}
