package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/memgest/memgest/reliability"
)

// hoursValue is a pflag value for a duration in hours, spelled as Go
// durations ("90m", "8760h") or with a day or year suffix ("30d", "1y",
// "1.5y"; a year is 365.25 days).
type hoursValue struct{ hours *float64 }

func (v hoursValue) String() string {
	if v.hours == nil || *v.hours == 0 {
		return "0"
	}
	return formatHours(*v.hours)
}

func (v hoursValue) Set(s string) error {
	h, err := parseHours(s)
	if err != nil {
		return err
	}
	*v.hours = h
	return nil
}

func (hoursValue) Type() string { return "duration" }

// parseHours reads a duration in hours (see hoursValue).
func parseHours(s string) (float64, error) {
	s = strings.TrimSpace(s)
	for suffix, hours := range map[string]float64{"y": reliability.HoursPerYear, "d": 24} {
		if num, ok := strings.CutSuffix(s, suffix); ok {
			x, err := strconv.ParseFloat(num, 64)
			if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
				return 0, fmt.Errorf("bad duration %q", s)
			}
			return x * hours, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q: want e.g. 90s, 8760h, 30d or 1y", s)
	}
	return d.Hours(), nil
}

// formatHours writes hours as the largest unit that keeps it readable.
func formatHours(h float64) string {
	switch {
	case h >= reliability.HoursPerYear:
		return fmt.Sprintf("%.3gy", h/reliability.HoursPerYear)
	case h >= 48:
		return fmt.Sprintf("%.4gd", h/24)
	case h >= 1:
		return fmt.Sprintf("%.3gh", h)
	case h*60 >= 1:
		return fmt.Sprintf("%.3gm", h*60)
	}
	return fmt.Sprintf("%.3gs", h*3600)
}

// bytesValue is a pflag value for a byte count: a number with an optional
// unit, as Redis's configuration spells them: k, m, g, t are powers of
// 1000; kb, mb, gb, tb (and kib, mib, gib, tib) powers of 1024.
type bytesValue struct{ bytes *float64 }

func (v bytesValue) String() string {
	if v.bytes == nil || *v.bytes == 0 {
		return "0"
	}
	return strconv.FormatFloat(*v.bytes, 'g', -1, 64)
}

func (v bytesValue) Set(s string) error {
	b, err := parseBytes(s)
	if err != nil {
		return err
	}
	*v.bytes = b
	return nil
}

func (bytesValue) Type() string { return "bytes" }

var byteUnits = []struct {
	suffix string
	scale  float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"b", 1},
}

// parseBytes reads a byte count (see bytesValue); "/s" may follow, for
// rates.
func parseBytes(s string) (float64, error) {
	t := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "/s")
	scale := 1.0
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, scale = num, u.scale
			break
		}
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, fmt.Errorf("bad byte count %q: want e.g. 8gb, 500mb/s or 1e9", s)
	}
	return x * scale, nil
}
