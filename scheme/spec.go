package scheme

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is the family of a scheme.
type Kind uint8

// The scheme kinds of DESIGN.md §2.
const (
	None Kind = iota + 1
	Rep
	Split
	Stripe
	Hybrid
)

var kindNames = map[Kind]string{None: "none", Rep: "rep", Split: "split", Stripe: "stripe", Hybrid: "hybrid"}

// Builtin is the spec of the built-in scheme none, the first of every
// catalogue.
func Builtin() Spec { return Spec{Kind: None} }

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Limits on scheme parameters. They bound what a spec may ask for, before the
// cluster checks it has enough nodes.
const (
	MaxReplicas = 16
	MaxData     = 32
	MaxParity   = 16
)

// ErrSpec is matched (errors.Is) by every spec parse or validation error.
var ErrSpec = errors.New("scheme: bad spec")

// SpecError reports why a spec string or parameter set was refused.
type SpecError struct {
	Spec   string
	Reason string
}

func (e *SpecError) Error() string { return fmt.Sprintf("scheme: bad spec %q: %s", e.Spec, e.Reason) }

// Is makes errors.Is(err, ErrSpec) true.
func (e *SpecError) Is(target error) bool { return target == ErrSpec }

// Spec is an immutable scheme descriptor. The zero Spec is invalid.
type Spec struct {
	Kind Kind
	R    int // replicas, for Rep (R ≥ 1; rep:1 is legal and equals none)
	K, M int // data and parity shards, for Split, Stripe and Hybrid
	// Chunk is a stripe scheme's chunk size in bytes; 0 is DefaultChunk,
	// the canonical form of 4096.
	Chunk int
	// Mode is how a packed scheme (stripe, hybrid) writes: in place (the
	// zero value), in batches or either by the write rate (decision 0009).
	Mode Mode
	// Bound is the latency bound of Batch and Auto; 0 is DefaultBound,
	// its canonical form.
	Bound time.Duration
}

// Mode is a packed scheme's write mode: "@inplace", "@batch[:BOUND]",
// "@auto[:BOUND]" after the spec's parameters.
type Mode uint8

// The write modes of decision 0009.
const (
	// InPlace appends new objects to the coordinator's own chunks and sends
	// every change as a delta to the list's holders (decision 0003).
	InPlace Mode = iota
	// Batch buffers a coordinator's writes for at most the bound and
	// writes them as new stripes of its own, encoded whole (BCStore §III).
	Batch
	// Auto batches while the coordinator's write rate fills stripes within
	// the bound and writes in place when it does not (BCStore §III-A).
	Auto
)

var modeNames = map[Mode]string{InPlace: "inplace", Batch: "batch", Auto: "auto"}

func (m Mode) String() string {
	if s, ok := modeNames[m]; ok {
		return s
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Latency bounds of the Batch and Auto modes: "@batch:2ms", "@auto:500us".
const (
	MinBound     = 100 * time.Microsecond
	MaxBound     = 100 * time.Millisecond
	DefaultBound = time.Millisecond
)

// LatencyBound is a batching scheme's latency bound: the longest a write
// waits in its coordinator's batch before the batch is encoded.
func (sp Spec) LatencyBound() time.Duration {
	if sp.Bound == 0 {
		return DefaultBound
	}
	return sp.Bound
}

// Chunk sizes of stripe schemes: "stripe:K+M/SIZE". A chunk must hold a
// small object; above 1 MiB a single update's delta would cost more than a
// split object's rewrite.
const (
	MinChunk     = 64
	MaxChunk     = 1 << 20
	DefaultChunk = 4096
)

// ChunkSize is a stripe scheme's chunk size.
func (sp Spec) ChunkSize() int {
	if sp.Chunk == 0 {
		return DefaultChunk
	}
	return sp.Chunk
}

// Parse reads a canonical spec: "none", "rep:R", "split:K+M", "stripe:K+M"
// or "stripe:K+M/CHUNK" (chunk size in bytes), "hybrid:K+M" or
// "hybrid:K+M/CHUNK", the last four optionally followed by a write mode:
// "@inplace", "@batch", "@batch:BOUND", "@auto" or "@auto:BOUND" (BOUND
// in us or ms, e.g. 2ms).
// Case-insensitive; no spaces.
func Parse(s string) (Spec, error) {
	lower := strings.ToLower(s)
	lower, mode, hasMode := strings.Cut(lower, "@")
	name, params, hasParams := strings.Cut(lower, ":")
	var sp Spec
	var err error
	switch name {
	case "none":
		if hasParams {
			return Spec{}, &SpecError{s, "none takes no parameters"}
		}
		sp = Spec{Kind: None}
	case "rep":
		sp.Kind = Rep
		sp.R, err = parseInt(s, params, hasParams, "replica count")
	case "split", "stripe", "hybrid":
		sp.Kind = map[string]Kind{"split": Split, "stripe": Stripe, "hybrid": Hybrid}[name]
		km, chunk, hasChunk := strings.Cut(params, "/")
		if hasChunk && sp.Kind == Split {
			return Spec{}, &SpecError{s, "only stripe and hybrid take a chunk size"}
		}
		if sp.K, sp.M, err = parseKM(s, km, hasParams); err == nil && hasChunk {
			sp.Chunk, err = parseInt(s, chunk, true, "chunk size")
			if sp.Chunk == DefaultChunk {
				sp.Chunk = 0
			}
		}
	default:
		return Spec{}, &SpecError{s, "unknown kind (want none, rep:R, split:K+M, stripe:K+M or hybrid:K+M)"}
	}
	if err == nil && hasMode {
		if sp.Kind != Stripe && sp.Kind != Hybrid {
			return Spec{}, &SpecError{s, "only stripe and hybrid take a write mode"}
		}
		sp.Mode, sp.Bound, err = parseMode(s, mode)
	}
	if err != nil {
		return Spec{}, err
	}
	return sp, sp.validate(s)
}

// parseMode reads a write mode, the text after "@": its bound is 0 where
// it is DefaultBound or absent.
func parseMode(spec, p string) (Mode, time.Duration, error) {
	name, bound, hasBound := strings.Cut(p, ":")
	var mode Mode
	switch name {
	case "inplace":
		if hasBound {
			return 0, 0, &SpecError{spec, "@inplace takes no latency bound"}
		}
		return InPlace, 0, nil
	case "batch":
		mode = Batch
	case "auto":
		mode = Auto
	default:
		return 0, 0, &SpecError{spec, "unknown write mode (want @inplace, @batch[:BOUND] or @auto[:BOUND])"}
	}
	if !hasBound {
		return mode, 0, nil
	}
	d, err := parseBound(spec, bound)
	if d == DefaultBound {
		d = 0
	}
	return mode, d, err
}

// parseBound reads a latency bound: a positive integer and "us" or "ms".
func parseBound(spec, p string) (time.Duration, error) {
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(p, "us"):
		unit = time.Microsecond
	case strings.HasSuffix(p, "ms"):
		unit = time.Millisecond
	default:
		return 0, &SpecError{spec, "a latency bound needs a unit, us or ms (e.g. @batch:2ms)"}
	}
	n, err := parseInt(spec, p[:len(p)-2], true, "latency bound")
	if err != nil {
		return 0, err
	}
	if d := time.Duration(n) * unit; n <= int(MaxBound/unit) && d >= MinBound {
		return d, nil
	}
	return 0, &SpecError{spec, fmt.Sprintf("the latency bound must be %s..%s", MinBound, MaxBound)}
}

func parseInt(spec, p string, present bool, what string) (int, error) {
	if !present || p == "" {
		return 0, &SpecError{spec, "missing " + what}
	}
	n, err := strconv.Atoi(p)
	if err != nil || strings.HasPrefix(p, "+") || strings.HasPrefix(p, "-") {
		return 0, &SpecError{spec, what + " is not a positive integer"}
	}
	return n, nil
}

func parseKM(spec, p string, present bool) (k, m int, err error) {
	ks, ms, ok := strings.Cut(p, "+")
	if !present || !ok {
		return 0, 0, &SpecError{spec, "want K+M, e.g. split:4+2"}
	}
	if k, err = parseInt(spec, ks, true, "K"); err != nil {
		return 0, 0, err
	}
	m, err = parseInt(spec, ms, true, "M")
	return k, m, err
}

func (sp Spec) validate(orig string) error {
	bad := func(reason string) error { return &SpecError{orig, reason} }
	switch sp.Kind {
	case None:
	case Rep:
		if sp.R < 1 || sp.R > MaxReplicas {
			return bad(fmt.Sprintf("replica count must be 1..%d", MaxReplicas))
		}
	case Split, Stripe, Hybrid:
		if sp.K < 1 || sp.K > MaxData {
			return bad(fmt.Sprintf("K must be 1..%d", MaxData))
		}
		if sp.M < 0 || sp.M > MaxParity {
			return bad(fmt.Sprintf("M must be 0..%d", MaxParity))
		}
		if sp.Kind == Hybrid && sp.M < 2 {
			return bad("hybrid needs M ≥ 2 (M−1 parities and a replica; hybrid:K+1 would be rep:2)")
		}
		if sp.Chunk != 0 && (sp.Kind == Split || sp.Chunk < MinChunk || sp.Chunk > MaxChunk) {
			return bad(fmt.Sprintf("chunk size must be %d..%d bytes", MinChunk, MaxChunk))
		}
	default:
		return bad("unknown kind")
	}
	return sp.validateMode(bad)
}

// validateMode checks the write mode: only stripe and hybrid have one, and
// only Batch and Auto a bound, within MinBound..MaxBound.
func (sp Spec) validateMode(bad func(string) error) error {
	switch {
	case sp.Mode != InPlace && sp.Kind != Stripe && sp.Kind != Hybrid:
		return bad("only stripe and hybrid take a write mode")
	case sp.Mode > Auto:
		return bad("unknown write mode")
	case sp.Bound != 0 && sp.Mode == InPlace:
		return bad("@inplace takes no latency bound")
	case sp.Bound != 0 && (sp.Bound < MinBound || sp.Bound > MaxBound || sp.Bound%time.Microsecond != 0):
		return bad(fmt.Sprintf("the latency bound must be %s..%s in whole µs", MinBound, MaxBound))
	}
	return nil
}

// Valid reports whether sp is a well-formed spec.
func (sp Spec) Valid() bool { return sp.validate(sp.String()) == nil }

// String is the canonical spelling, which Parse accepts.
func (sp Spec) String() string {
	switch sp.Kind {
	case None:
		return "none"
	case Rep:
		return "rep:" + strconv.Itoa(sp.R)
	case Split, Stripe, Hybrid:
		s := sp.Kind.String() + ":" + strconv.Itoa(sp.K) + "+" + strconv.Itoa(sp.M)
		if sp.Chunk != 0 {
			s += "/" + strconv.Itoa(sp.Chunk)
		}
		return s + sp.modeSuffix()
	}
	return "invalid"
}

// modeSuffix is the canonical spelling of the write mode: "" in place,
// "@batch" or "@auto" and the bound where it is not the default.
func (sp Spec) modeSuffix() string {
	if sp.Mode == InPlace {
		return ""
	}
	s := "@" + sp.Mode.String()
	switch {
	case sp.Bound == 0:
	case sp.Bound%time.Millisecond == 0:
		s += ":" + strconv.FormatInt(int64(sp.Bound/time.Millisecond), 10) + "ms"
	default:
		s += ":" + strconv.FormatInt(int64(sp.Bound/time.Microsecond), 10) + "us"
	}
	return s
}

// Tolerance is the number of node failures every key of the scheme survives.
func (sp Spec) Tolerance() int {
	switch sp.Kind {
	case Rep:
		return sp.R - 1
	case Split, Stripe, Hybrid:
		return sp.M
	}
	return 0
}

// Nodes is how many distinct nodes one key's pieces occupy: the shard
// placement must be at least this long.
func (sp Spec) Nodes() int {
	switch sp.Kind {
	case None:
		return 1
	case Rep:
		return sp.R
	case Split, Stripe, Hybrid:
		// Hybrid: k data, m−1 parity and one replica node (decision 0008).
		return sp.K + sp.M
	}
	return 0
}

// Overhead is stored bytes per logical byte of value, ignoring headers and
// padding (MemEC §3.3): 1 for none, R for rep, (K+M)/K for split and stripe,
// (2K+M−1)/K for hybrid.
func (sp Spec) Overhead() float64 {
	switch sp.Kind {
	case None:
		return 1
	case Rep:
		return float64(sp.R)
	case Split, Stripe:
		return float64(sp.K+sp.M) / float64(sp.K)
	case Hybrid:
		return float64(2*sp.K+sp.M-1) / float64(sp.K)
	}
	return 0
}
