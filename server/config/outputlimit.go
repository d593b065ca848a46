package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// OutputLimit is a client-output-buffer-limit class: a connection whose
// unwritten output passes Hard bytes, or stays past Soft bytes for longer
// than SoftFor, is closed. A zero Hard or Soft is no limit, as in Redis.
type OutputLimit struct {
	Hard, Soft int64
	SoftFor    time.Duration
}

// DefaultPubSubLimit is Redis's default for the pubsub class: "32mb 8mb
// 60".
var DefaultPubSubLimit = OutputLimit{Hard: 32 << 20, Soft: 8 << 20, SoftFor: 60 * time.Second}

// String renders l as Redis writes the class in its configuration:
// "<hard bytes> <soft bytes> <soft seconds>".
func (l *OutputLimit) String() string {
	return fmt.Sprintf("%d %d %d", l.Hard, l.Soft, int64(l.SoftFor/time.Second))
}

// Set parses Redis's form, "<hard> <soft> <soft seconds>", sizes in
// bytes or with a unit (k, kb, m, mb, g, gb, any case); it makes l a
// flag (pflag.Value).
func (l *OutputLimit) Set(s string) error {
	f := strings.Fields(s)
	if len(f) != 3 {
		return fmt.Errorf("config: output buffer limit %q: want \"<hard> <soft> <soft seconds>\", as \"32mb 8mb 60\"", s)
	}
	hard, err1 := parseMemory(f[0])
	soft, err2 := parseMemory(f[1])
	secs, err3 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || secs < 0 || secs > 1<<31 {
		return fmt.Errorf("config: output buffer limit %q: want \"<hard> <soft> <soft seconds>\", as \"32mb 8mb 60\"", s)
	}
	*l = OutputLimit{Hard: hard, Soft: soft, SoftFor: time.Duration(secs) * time.Second}
	return l.validate()
}

// Type names the flag's value type for --help.
func (l *OutputLimit) Type() string { return "limits" }

func (l OutputLimit) validate() error {
	if l.Hard < 0 || l.Soft < 0 || l.SoftFor < 0 {
		return errors.New("config: client-output-buffer-limit-pubsub values must be ≥ 0 (0: no limit)")
	}
	return nil
}

// memoryUnits are Redis's memtoull units.
var memoryUnits = []struct {
	suffix string
	mult   int64
}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}}

// parseMemory reads a byte count as Redis's configuration does: "1gb" is
// 1<<30 bytes, "1g" 10^9.
func parseMemory(s string) (int64, error) {
	s = strings.ToLower(s)
	mult := int64(1)
	for _, u := range memoryUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("config: %q is not a byte count", s)
	}
	return v * mult, nil
}
