package tests

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
)

// TestStripeAgainstModel runs random SET (plain, NX, XX), GET, APPEND,
// INCR, DEL and SCHEME.MOVE sequences over stripe:2+1, 3+1, 4+2 and 3+2
// (and rep:3, to move to and from) with chunks of 256 B and 4 KiB, each
// client on keys of its own, and checks every reply against the model of
// one key; then every key is read back through another node.
func TestStripeAgainstModel(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{extra: []string{"--enable-debug-command"}})
	ctx := ctxT(t)
	for _, size := range []int{256, 4096} {
		t.Run(fmt.Sprintf("%dB", size), func(t *testing.T) {
			var schemes []string
			for _, km := range []string{"2+1", "3+1", "4+2", "3+2"} {
				schemes = append(schemes, fmt.Sprintf("stripe:%s/%d", km, size))
			}
			schemes = append(schemes, "rep:3")
			const clients, keysEach, ops = 6, 8, 250
			states := make([]map[string]kvState, clients)
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for id := 0; id < clients; id++ {
				wg.Add(1)
				go func(id int) {
					defer wg.Done()
					rdb := c.plainClient(id%len(c.nodes), 2)
					rng := rand.New(rand.NewSource(int64(size + id)))
					var keys []string
					for k := 0; k < keysEach; k++ {
						keys = append(keys, fmt.Sprintf("stripe:%d:%d:%d", size, id, k))
					}
					state := map[string]kvState{}
					for i := 0; i < ops; i++ {
						in := randomInput(rng, keys, schemes, id, i)
						out, err := runInput(ctx, rdb, in)
						if err != nil {
							errs <- fmt.Errorf("%+v: %v", in, err)
							return
						}
						ok, next := kvModel.Step(state[in.key], in, out)
						if !ok {
							errs <- fmt.Errorf("%+v answered %+v; the model has %+v", in, out, state[in.key])
							return
						}
						state[in.key] = next.(kvState)
					}
					states[id] = state
				}(id)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			reader := c.plainClient(len(c.nodes)-1, 2)
			checked := 0
			for _, state := range states {
				for key, want := range state {
					out, err := runInput(ctx, reader, kvInput{key: key, op: "get"})
					if err != nil || out.exists != want.exists || out.value != want.value {
						t.Fatalf("GET %s = %+v, %v; the model has %+v", key, out, err, want)
					}
					checked++
					if want.exists {
						if err := reader.Do(ctx, "SCHEME.VERIFY", key).Err(); err != nil {
							t.Fatalf("SCHEME.VERIFY %s: %v", key, err)
						}
					}
				}
			}
			// Fill chunks until they seal, then delete and overwrite in them:
			// updates to sealed chunks go to parity as deltas.
			for _, sch := range schemes[:4] {
				for i := 0; i < 300; i++ {
					must(t, reader.Do(ctx, "SET", fmt.Sprintf("fill:%s:%d", sch, i), strings.Repeat("x", i%50), "SCHEME", sch).Err())
				}
				for i := 0; i < 300; i += 2 {
					must(t, reader.Do(ctx, "DEL", fmt.Sprintf("fill:%s:%d", sch, i)).Err())
					must(t, reader.Do(ctx, "SET", fmt.Sprintf("fill:%s:%d", sch, i+1), "y").Err())
				}
			}
			for i := range c.nodes {
				res, err := c.plainClient(i, 2).Do(ctx, "DEBUG", "STRIPES").Slice()
				if err != nil || len(res) != 2 || res[0].(int64) == 0 {
					t.Fatalf("DEBUG STRIPES on node %d: %v, %v (want chunks checked and no problem)", i, res, err)
				}
			}
			k := fmt.Sprintf("stripe:%d:of", size)
			must(t, reader.Do(ctx, "SET", k, "v", "SCHEME", schemes[2]).Err())
			want := strings.TrimSuffix(schemes[2], "/4096") // the default chunk size is not spelled
			if of, err := reader.Do(ctx, "SCHEME.OF", k).Result(); err != nil || !strings.Contains(fmt.Sprint(of), "spec "+want+" ") {
				t.Fatalf("SCHEME.OF %s = %v, %v; want %s", k, of, err, want)
			}
			t.Logf("%d operations checked against the model, %d keys read back and verified", clients*ops, checked)
		})
	}
}
