package lograte

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// SuppressedKey is the attribute a written line carries when lines of its
// kind were suppressed before it.
const SuppressedKey = "suppressed"

// Handler is a slog.Handler that writes through next only what its
// Limiter allows.
type Handler struct {
	next   slog.Handler
	lim    *Limiter
	prefix string // the kind of the attributes and groups added with With
}

// NewHandler returns a Handler over next.
func NewHandler(next slog.Handler, lim *Limiter) *Handler {
	return &Handler{next: next, lim: lim}
}

// Enabled is next's.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle writes r if the Limiter allows a line of its kind now.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(r.Level.String())
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, a)
		return true
	})
	write, suppressed := h.lim.Allow(b.String())
	if !write {
		return nil
	}
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int(SuppressedKey, suppressed))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs adds attrs to next and to the kind of every line.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		writeAttr(&b, a)
	}
	return &Handler{next: h.next.WithAttrs(attrs), lim: h.lim, prefix: b.String()}
}

// WithGroup opens a group in next and in the kind of every line.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), lim: h.lim, prefix: h.prefix + name + "."}
}

// writeAttr adds a to a line's kind unless its value varies from one line
// of a kind to the next (an error, a duration, a time).
func writeAttr(b *strings.Builder, a slog.Attr) {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindDuration, slog.KindTime:
		return
	case slog.KindGroup:
		for _, g := range v.Group() {
			writeAttr(b, slog.Attr{Key: a.Key + "." + g.Key, Value: g.Value})
		}
		return
	case slog.KindAny:
		if varies(v.Any()) {
			return
		}
	}
	fmt.Fprintf(b, "\x00%s=%s", a.Key, v)
}

// varies says whether a value changes between lines of one kind.
func varies(v any) bool {
	switch v.(type) {
	case error, time.Duration, time.Time:
		return true
	}
	return false
}

// Hclog returns l writing only what lim allows. Everything else, levels
// and names included, is l's.
func Hclog(l hclog.Logger, lim *Limiter) hclog.Logger {
	return &hclogger{Logger: l, lim: lim}
}

type hclogger struct {
	hclog.Logger
	lim    *Limiter
	prefix string // the kind of the arguments added with With, and names
}

// Log writes msg if the Limiter allows a line of its kind now.
func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if args, ok := h.allow(level, msg, args); ok {
		h.Logger.Log(level, msg, args...)
	}
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

// With adds args to the logger and to the kind of every line.
func (h *hclogger) With(args ...any) hclog.Logger {
	return &hclogger{Logger: h.Logger.With(args...), lim: h.lim, prefix: h.prefix + argsKind(args)}
}

// Named names the logger, and the kind of every line.
func (h *hclogger) Named(name string) hclog.Logger {
	return &hclogger{Logger: h.Logger.Named(name), lim: h.lim, prefix: h.prefix + name + "."}
}

// ResetNamed renames the logger, and the kind of every line.
func (h *hclogger) ResetNamed(name string) hclog.Logger {
	return &hclogger{Logger: h.Logger.ResetNamed(name), lim: h.lim, prefix: name + "."}
}

// allow decides on a line below a level the logger writes, and returns
// its arguments with the count of the lines suppressed before it.
func (h *hclogger) allow(level hclog.Level, msg string, args []any) ([]any, bool) {
	if level < h.Logger.GetLevel() {
		return args, false // not written anyway: not counted either
	}
	write, suppressed := h.lim.Allow(h.prefix + level.String() + msg + argsKind(args))
	if suppressed > 0 {
		args = append(args[:len(args):len(args)], SuppressedKey, suppressed)
	}
	return args, write
}

// argsKind is the kind of hclog's key-value arguments: the values that do
// not vary from one line of a kind to the next.
func argsKind(args []any) string {
	var b strings.Builder
	for i := 0; i+1 < len(args); i += 2 {
		if !varies(args[i+1]) {
			fmt.Fprintf(&b, "\x00%v=%v", args[i], args[i+1])
		}
	}
	return b.String()
}
