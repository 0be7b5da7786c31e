package pubsub

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/sampler"
)

// Source returns the driver's counters as a sampler source, read at every
// interval with the run's other counters:
//
//	pubsub_backlog_messages               Gauge    published, owed to a subscriber, not yet delivered
//	pubsub_published_total                Counter  messages written by the publishers
//	pubsub_delivered_total                Counter  expected messages delivered (first arrivals)
//	pubsub_duplicates_total               Counter  messages delivered again
//	pubsub_out_of_order_total             Counter  messages delivered after a later one of their stream
//	pubsub_early_total                    Counter  delivered, published before the subscription
//	pubsub_foreign_total                  Counter  messages without throng's header
//	pubsub_lost_total                     Counter  owed, never delivered (known at the drain): lost while connected and missed while disconnected
//	pubsub_missed_total                   Counter  of which owed while the subscriber was disconnected by a broken connection
//	pubsub_connections                    Gauge    open connections
//	pubsub_disconnects_total              Counter  connections the broker, the network or the keep-alive broke
//	pubsub_slow_consumer_disconnects_total Counter of which the server cut off as slow consumers (NATS, with pubsub.monitor)
//	pubsub_dead_connections_total         Counter  of which the keep-alive found dead (a ping unanswered)
//	pubsub_broken_connections             Gauge    connections broken and not yet restored
//	pubsub_outages_total                  Counter  windows during which connections were broken
//	pubsub_outage_seconds_total           Counter  their length
//	pubsub_publish_asked_per_second       Gauge    publish rate the scenario asks of the connected publishers (speedup not applied)
//	pubsub_generator_bytes_per_connection Gauge    growth of the process's resident memory since the run began, per open connection
func (c *Config) Source() sampler.Source { return &source{c: c} }

type source struct{ c *Config }

func (s *source) Name() string { return "pubsub" }

func (s *source) Sample(ctx context.Context, emit func(sampler.Point)) error {
	r := s.c.cur.Load()
	if r == nil {
		return nil // no run yet: nothing to read
	}
	gauge := func(name string, v float64) { emit(sampler.Point{Name: name, Kind: sampler.Gauge, Value: v}) }
	counter := func(name string, v uint64) {
		emit(sampler.Point{Name: name, Kind: sampler.Counter, Value: float64(v)})
	}
	st := &r.stats
	delivered := st.delivered.Load()
	backlog := float64(0)
	if exp := r.reg.expected(); exp > delivered {
		backlog = float64(exp - delivered)
	}
	r.mu.Lock()
	drained := r.drained
	r.mu.Unlock()
	if drained {
		backlog = 0 // what is missing after the drain is lost
	}
	gauge("pubsub_backlog_messages", backlog)
	counter("pubsub_published_total", r.reg.published())
	counter("pubsub_delivered_total", delivered)
	counter("pubsub_duplicates_total", st.dup.Load())
	counter("pubsub_out_of_order_total", st.late.Load())
	counter("pubsub_early_total", st.early.Load())
	counter("pubsub_foreign_total", st.corrupt.Load())
	counter("pubsub_lost_total", st.lost.Load())
	counter("pubsub_missed_total", st.missed.Load())
	conns := st.connected.Load()
	gauge("pubsub_connections", float64(conns))
	counter("pubsub_disconnects_total", st.disconnects.Load())
	counter("pubsub_slow_consumer_disconnects_total", st.slow.Load())
	counter("pubsub_dead_connections_total", st.dead.Load())
	gauge("pubsub_publish_asked_per_second", r.askedRate())
	broken, outages, length := r.outageTotals()
	gauge("pubsub_broken_connections", float64(broken))
	counter("pubsub_outages_total", uint64(outages))
	emit(sampler.Point{Name: "pubsub_outage_seconds_total", Kind: sampler.Counter, Value: length.Seconds()})
	if rss := selfRSS(); rss > 0 && conns > 0 && r.rss0 > 0 {
		gauge("pubsub_generator_bytes_per_connection", float64(max(0, rss-r.rss0))/float64(conns))
	}
	return nil
}

// askedRate is the publish rate asked of the publishers connected now.
func (r *run) askedRate() float64 {
	r.mu.Lock()
	var groups []string
	for _, s := range r.sessions {
		if !s.closing.Load() {
			groups = append(groups, s.u.Group)
		}
	}
	r.mu.Unlock()
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum float64
	for _, g := range groups {
		sum += c.asked[g]
	}
	return sum
}

// selfRSS returns the process's resident memory in bytes (0 if unknown).
func selfRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

var _ sampler.Source = (*source)(nil)
