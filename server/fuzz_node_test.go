package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fuzzNode is one single-node memgest, started in process the first time a
// fuzz input needs it and kept for the process's life (each input starts
// with FLUSHALL).
var fuzzNode struct {
	once sync.Once
	rdb  *redis.Client
	err  error
}

// freePort returns a loopback port free at the time of asking.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startFuzzNode starts the node and waits until it serves keys.
func startFuzzNode() (*redis.Client, error) {
	rdb, _, err := startTestNode()
	return rdb, err
}

// startTestNode starts a single-node memgest in process and waits until it
// serves keys; the caller closes the node.
func startTestNode() (*redis.Client, *Node, error) {
	cfg := DefaultConfig()
	var err error
	if cfg.Port, err = freePort(); err != nil {
		return nil, nil, err
	}
	if cfg.PeerPort, err = freePort(); err != nil {
		return nil, nil, err
	}
	cfg.HTTPPort = 0
	if cfg.DataDir, err = os.MkdirTemp("", "memgest-fuzz-"); err != nil {
		return nil, nil, err
	}
	n, err := Start(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: n.ClientAddr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = rdb.Set(ctx, "fuzz:ready", "1", 0).Err(); err == nil {
			return rdb, n, nil
		}
		if time.Now().After(deadline) {
			n.Close()
			return nil, nil, err
		}
	}
}

// fuzzKeys and fuzzValues are what a fuzz program's bytes pick from: few
// keys, so commands meet, and values that are and are not integers.
var (
	fuzzKeys   = []string{"a", "b", "{a}c", "d"}
	fuzzValues = []string{"", "0", "41", "-7", "x", "9223372036854775807", "héllo"}
)

// FuzzCommandSequences runs a program of string commands (SET with NX/XX,
// GET, GETDEL, DEL, EXISTS, APPEND, STRLEN, INCR, DECR, INCRBY, MSET, MGET)
// against a node and checks every reply against a map. Each three bytes of
// the input are one command: which, on which key, with which value.
func FuzzCommandSequences(f *testing.F) {
	f.Add([]byte{0, 0, 2, 10, 0, 0, 1, 0, 0})
	f.Add([]byte{0, 1, 4, 10, 1, 0, 5, 1, 0, 11, 1, 5})
	f.Add([]byte{2, 2, 3, 3, 2, 3, 8, 2, 0, 12, 0, 1, 13, 2, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		fuzzNode.once.Do(func() { fuzzNode.rdb, fuzzNode.err = startFuzzNode() })
		if fuzzNode.err != nil {
			t.Fatalf("starting a node: %v", fuzzNode.err)
		}
		rdb, ctx := fuzzNode.rdb, context.Background()
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		model := map[string]string{}
		for i := 0; i+3 <= len(prog) && i < 3*64; i += 3 {
			key, value := fuzzKeys[int(prog[i+1])%len(fuzzKeys)], fuzzValues[int(prog[i+2])%len(fuzzValues)]
			other := fuzzKeys[(int(prog[i+1])+1)%len(fuzzKeys)]
			if msg := stepCommand(ctx, rdb, model, prog[i]%14, key, other, value); msg != "" {
				t.Fatalf("command %d of %x: %s", i/3, prog, msg)
			}
		}
	})
}

// stepCommand runs command op on the node and on model, and describes any
// difference ("" when there is none).
func stepCommand(ctx context.Context, rdb *redis.Client, model map[string]string, op byte, key, other, value string) string {
	cur, exists := model[key]
	switch op {
	case 0, 1, 2: // SET, SET NX, SET XX
		args := []any{"SET", key, value}
		applies := true
		if op == 1 {
			args, applies = append(args, "NX"), !exists
		} else if op == 2 {
			args, applies = append(args, "XX"), exists
		}
		err := rdb.Do(ctx, args...).Err()
		if applies {
			model[key] = value
			return expectOK(args, err)
		}
		return expectNil(args, err)
	case 3:
		return expectValue("GET "+key, rdb.Get(ctx, key), cur, exists)
	case 4:
		delete(model, key)
		return expectValue("GETDEL "+key, rdb.GetDel(ctx, key), cur, exists)
	case 5:
		delete(model, key)
		return expectInt("DEL "+key, rdb.Del(ctx, key), boolCount(exists))
	case 6:
		_, otherExists := model[other]
		return expectInt("EXISTS "+key+" "+other, rdb.Exists(ctx, key, other), boolCount(exists)+boolCount(otherExists))
	case 7:
		model[key] = cur + value
		return expectInt("APPEND "+key, rdb.Append(ctx, key, value), int64(len(cur+value)))
	case 8:
		return expectInt("STRLEN "+key, rdb.StrLen(ctx, key), int64(len(cur)))
	case 9: // INCR
		return expectIncr(rdb, ctx, model, key, 1)
	case 10: // DECR
		return expectIncr(rdb, ctx, model, key, -1)
	case 11: // INCRBY, by -3..3
		return expectIncr(rdb, ctx, model, key, int64(len(value))-3)
	case 12:
		model[key], model[other] = value, cur
		return expectOK([]any{"MSET"}, rdb.MSet(ctx, key, value, other, cur).Err())
	default:
		vals, err := rdb.MGet(ctx, key, other).Result()
		if err != nil {
			return "MGET: " + err.Error()
		}
		for i, k := range []string{key, other} {
			want, ok := model[k]
			if got, isStr := vals[i].(string); isStr != ok || got != want {
				return "MGET " + k + ": got " + strconv.Quote(toString(vals[i])) + ", want " + strconv.Quote(want)
			}
		}
	}
	return ""
}

// expectIncr checks INCRBY by on key: the value as an integer plus by, or
// the error Redis gives for a value that is no integer or an overflow, which
// changes nothing.
func expectIncr(rdb *redis.Client, ctx context.Context, model map[string]string, key string, by int64) string {
	cur, exists := model[key]
	n, err := rdb.IncrBy(ctx, key, by).Result()
	v, isInt := int64(0), true
	if exists {
		v, isInt = redisInt(cur)
	}
	sum := v + by
	overflow := (by > 0 && sum < v) || (by < 0 && sum > v)
	if !isInt || overflow {
		if err == nil {
			return "INCRBY " + key + " of " + strconv.Quote(cur) + " answered " + strconv.FormatInt(n, 10) + ", want an error"
		}
		return ""
	}
	model[key] = strconv.FormatInt(sum, 10)
	if err != nil || n != sum {
		return "INCRBY " + key + ": got " + strconv.FormatInt(n, 10) + ", " + errString(err) + "; want " + strconv.FormatInt(sum, 10)
	}
	return ""
}

// redisInt parses s as Redis does for INCR: a 64-bit integer written the
// canonical way, so "00", "+5", "-0" and " 5" are not integers.
func redisInt(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && strconv.FormatInt(v, 10) == s
}

func expectOK(args []any, err error) string {
	if err != nil {
		return toString(args) + ": " + err.Error() + ", want OK"
	}
	return ""
}

func expectNil(args []any, err error) string {
	if !errors.Is(err, redis.Nil) {
		return toString(args) + ": " + errString(err) + ", want nil"
	}
	return ""
}

func expectValue(what string, cmd *redis.StringCmd, want string, exists bool) string {
	got, err := cmd.Result()
	switch {
	case !exists && !errors.Is(err, redis.Nil):
		return what + ": got " + strconv.Quote(got) + ", " + errString(err) + "; want nil"
	case exists && (err != nil || got != want):
		return what + ": got " + strconv.Quote(got) + ", " + errString(err) + "; want " + strconv.Quote(want)
	}
	return ""
}

func expectInt(what string, cmd *redis.IntCmd, want int64) string {
	if got, err := cmd.Result(); err != nil || got != want {
		return what + ": got " + strconv.FormatInt(got, 10) + ", " + errString(err) + "; want " + strconv.FormatInt(want, 10)
	}
	return ""
}

func boolCount(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = toString(p)
		}
		return strings.Join(parts, " ")
	}
	return "?"
}
