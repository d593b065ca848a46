package config

import (
	"testing"
	"time"
)

// --client-output-buffer-limit-pubsub takes Redis's form and units.
func TestOutputLimitFlag(t *testing.T) {
	for in, want := range map[string]OutputLimit{
		"32mb 8mb 60": DefaultPubSubLimit,
		"0 0 0":       {},
		"1GB 1k 5":    {Hard: 1 << 30, Soft: 1000, SoftFor: 5 * time.Second},
		"100 200b 1":  {Hard: 100, Soft: 200, SoftFor: time.Second},
	} {
		var l OutputLimit
		if err := l.Set(in); err != nil || l != want {
			t.Errorf("Set(%q) = %+v, %v; want %+v", in, l, err, want)
		}
	}
	for _, bad := range []string{"", "32mb 8mb", "32mb 8mb 60 1", "-1 0 0", "x 0 0", "1 1 -1", "1tb 0 0"} {
		var l OutputLimit
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted: %+v", bad, l)
		}
	}
	if got := DefaultPubSubLimit.String(); got != "33554432 8388608 60" {
		t.Errorf("String() = %q", got)
	}
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.PubSubLimit.Hard = -1
	if err := c.Validate(); err == nil {
		t.Error("a negative limit validated")
	}
}
