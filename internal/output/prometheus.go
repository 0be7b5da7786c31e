package output

import (
	"context"
	"net/http"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// Exporter serves a run's State to Prometheus through the official client
// library: cumulative counters, and latency histograms with both classic
// buckets (LatencyBounds, in the text format) and native buckets
// (NativeSchema, to a Prometheus that scrapes native histograms over
// protobuf). It is a Sink: it takes each interval into its state.
type Exporter struct {
	state *State
	reg   *prometheus.Registry
}

// NewExporter returns an exporter of run with nothing recorded yet.
func NewExporter(run Run) *Exporter {
	e := &Exporter{state: NewState(run), reg: prometheus.NewRegistry()}
	e.reg.MustRegister(collector{e.state})
	return e
}

// State is the exporter's state.
func (e *Exporter) State() *State { return e.state }

// Handler serves the metrics page (text or protobuf, as the scraper asks).
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Gather returns the current metric families (for tests and tools).
func (e *Exporter) Gather() ([]*dto.MetricFamily, error) { return e.reg.Gather() }

// Write adds the interval to the state.
func (e *Exporter) Write(_ context.Context, iv *Interval) error {
	e.state.Add(iv)
	return nil
}

// Close does nothing: the state stays served until the server stops.
func (e *Exporter) Close(context.Context) error { return nil }

// collector renders a State's families as constant metrics at each scrape.
// It is unchecked (it describes nothing): its series appear as the run goes.
type collector struct{ s *State }

func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.s.Families() {
		if len(f.Series) == 0 {
			continue
		}
		names := make([]string, len(f.Series[0].Labels))
		for i, l := range f.Series[0].Labels {
			names[i] = l.Name
		}
		desc := prometheus.NewDesc(f.Name, f.Help, names, nil)
		for _, s := range f.Series {
			values := make([]string, len(s.Labels))
			for i, l := range s.Labels {
				values[i] = l.Value
			}
			switch f.Kind {
			case Counter:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, s.Value, values...)
			case Gauge:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, s.Value, values...)
			case Histogram:
				ch <- histMetric{desc: desc, labels: prometheus.MakeLabelPairs(desc, values), s: s}
			}
		}
	}
}

// histMetric is a histogram with classic and native buckets together (the
// library's constant histograms have one kind or the other).
type histMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	s      Series
}

func (m histMetric) Desc() *prometheus.Desc { return m.desc }

func (m histMetric) Write(out *dto.Metric) error {
	h := m.s.Hist
	dh := &dto.Histogram{
		SampleCount: proto.Uint64(h.N),
		SampleSum:   proto.Float64(Seconds(h)),
	}
	for i, c := range Cumulative(h, LatencyBounds) {
		dh.Bucket = append(dh.Bucket, &dto.Bucket{UpperBound: proto.Float64(LatencyBounds[i]), CumulativeCount: proto.Uint64(c)})
	}
	zero, buckets := Native(h)
	dh.Schema = proto.Int32(NativeSchema)
	dh.ZeroThreshold = proto.Float64(NativeZeroThreshold)
	dh.ZeroCount = proto.Uint64(zero)
	idx := make([]int, 0, len(buckets))
	for i := range buckets {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var prev int64
	for k, i := range idx {
		if k == 0 || i != idx[k-1]+1 {
			off := int32(i)
			if k > 0 {
				off = int32(i - idx[k-1] - 1)
			}
			dh.PositiveSpan = append(dh.PositiveSpan, &dto.BucketSpan{Offset: proto.Int32(off), Length: proto.Uint32(0)})
		}
		sp := dh.PositiveSpan[len(dh.PositiveSpan)-1]
		sp.Length = proto.Uint32(sp.GetLength() + 1)
		dh.PositiveDelta = append(dh.PositiveDelta, buckets[i]-prev)
		prev = buckets[i]
	}
	if len(idx) == 0 && zero == 0 {
		// A native histogram with no observation yet needs a span to be
		// told from a classic one.
		dh.PositiveSpan = []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(0)}}
	}
	out.Label = m.labels
	out.Histogram = dh
	return nil
}
