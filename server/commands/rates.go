package commands

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/server/core"
)

// INFO's instantaneous_* fields, computed as Redis computes them
// (server.c trackInstantaneousMetric, run every 100 ms by serverCron): a
// sample every sampleEvery of a counter's rate since the last sample, and
// the mean of the last rateSamples samples, so a reading covers the last
// 1.6 s.

const (
	sampleEvery = 100 * time.Millisecond
	rateSamples = 16
)

// rateMeter turns samples of a running total into a rate. Its zero value
// is ready; the first sample only sets the base.
type rateMeter struct {
	lastAt, lastValue int64 // the previous sample: a monotime and the total
	started           bool
	samples           [rateSamples]float64 // per second
	next              int
}

// sample records the total value at time now (a monotime in nanoseconds).
func (m *rateMeter) sample(now, value int64) {
	if m.started {
		rate := 0.0
		if dt := now - m.lastAt; dt > 0 {
			rate = float64(value-m.lastValue) * 1e9 / float64(dt)
		}
		m.samples[m.next] = rate
		m.next = (m.next + 1) % rateSamples
	}
	m.lastAt, m.lastValue, m.started = now, value, true
}

// rate is the mean of the samples, those not yet taken counting as 0, as
// Redis's getInstantaneousMetric averages its whole table.
func (m *rateMeter) rate() float64 {
	sum := 0.0
	for _, s := range m.samples {
		sum += s
	}
	return sum / rateSamples
}

// meters are a node's instantaneous metrics and the running totals they
// sample, with the peak of used memory, which the sampler also follows.
type meters struct {
	netIn, netOut atomic.Int64 // client bytes read and written
	peakMemory    atomic.Int64

	mu                 sync.Mutex
	ops, input, output rateMeter
}

// sample takes one sample of each total at now (a monotime), and follows
// the peak of used memory (core's gauge, what maxmemory bounds).
func (n *Server) sample(now int64) {
	m := &n.info.meters
	m.mu.Lock()
	m.ops.sample(now, n.Stats.Commands.Load())
	m.input.sample(now, m.netIn.Load())
	m.output.sample(now, m.netOut.Load())
	m.mu.Unlock()
	m.raisePeak(n.MemUsed.Used())
}

// rates are the current readings: commands per second, and client input
// and output in KiB per second.
func (n *Server) rates() (ops, inKiB, outKiB float64) {
	m := &n.info.meters
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops.rate(), m.input.rate() / 1024, m.output.rate() / 1024
}

// raisePeak makes used the peak of used memory if it is one.
func (m *meters) raisePeak(used int64) {
	for {
		peak := m.peakMemory.Load()
		if used <= peak || m.peakMemory.CompareAndSwap(peak, used) {
			return
		}
	}
}

// SampleLoop samples the instantaneous metrics every sampleEvery until ctx
// ends: the node runs it in the background.
func (n *Server) SampleLoop(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		n.sample(core.Monotime())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
