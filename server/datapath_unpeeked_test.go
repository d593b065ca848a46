package server

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestUnpeekedSetKeepsAKeysScheme: with none the default scheme, a plain
// SET commits without reading the key first (writeUnpeeked), except over a
// key of another scheme, which keeps it; pipelined (a SET group) or not.
func TestUnpeekedSetKeepsAKeysScheme(t *testing.T) {
	rdb, n, err := startTestNode()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.Close()
		n.Close()
		os.RemoveAll(n.Cfg.DataDir)
	})
	ctx := context.Background()
	schemeOf := func(key string) string {
		t.Helper()
		of, err := rdb.Do(ctx, "SCHEME.OF", key).Slice()
		if err != nil || len(of) < 2 {
			t.Fatalf("SCHEME.OF %s: %v %v", key, of, err)
		}
		return fmt.Sprint(of[1])
	}
	if err := rdb.Do(ctx, "SET", "kept", "v1", "SCHEME", "rep:1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "kept", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if of := schemeOf("kept"); !strings.HasPrefix(of, "rep:1") {
		t.Fatalf("a plain SET moved a rep:1 key to %s", of)
	}
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "fresh", "a", 0)
		p.Set(ctx, "kept", "v3", 0)
		p.Set(ctx, "fresh", "b", 0) // the group flushes before a repeated key
		return nil
	})
	if err != nil || len(cmds) != 3 {
		t.Fatalf("pipeline: %v %v", cmds, err)
	}
	if of := schemeOf("kept"); !strings.HasPrefix(of, "rep:1") {
		t.Fatalf("a pipelined SET moved a rep:1 key to %s", of)
	}
	if of := schemeOf("fresh"); !strings.HasPrefix(of, "none") {
		t.Fatalf("a new key went to %s, not the default none", of)
	}
	for key, want := range map[string]string{"kept": "v3", "fresh": "b"} {
		if got, err := rdb.Get(ctx, key).Result(); err != nil || got != want {
			t.Fatalf("GET %s: %q %v, want %q", key, got, err, want)
		}
	}
}
