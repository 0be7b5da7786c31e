package output

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// OTLP pushes the run's cumulative state as OpenTelemetry metrics through
// the OpenTelemetry SDK's OTLP/HTTP exporter after every interval:
// counters as cumulative monotonic sums, gauges, latency as explicit-bucket
// histograms (LatencyBounds). Names follow OpenTelemetry's style (see
// OTelName), the labels become attributes.
type OTLP struct {
	exp   *otlpmetrichttp.Exporter
	state *State
	res   *resource.Resource
}

// NewOTLP returns a sink exporting to url (like
// http://127.0.0.1:4318/v1/metrics) for run.
func NewOTLP(ctx context.Context, url string, run Run) (*OTLP, error) {
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(url),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}), otlpmetrichttp.WithTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("throng"),
		attribute.String("throng.scenario", run.Scenario), attribute.String("throng.label", run.Label))
	return &OTLP{exp: exp, state: NewState(run), res: res}, nil
}

// Write adds the interval to the state and exports every series.
func (o *OTLP) Write(ctx context.Context, iv *Interval) error {
	o.state.Add(iv)
	start, _ := o.state.Span()
	return o.exp.Export(ctx, ResourceMetrics(o.res, o.state.Families(), start, iv.End))
}

// Close shuts the exporter down.
func (o *OTLP) Close(ctx context.Context) error { return o.exp.Shutdown(ctx) }

// OTelName is a family's OpenTelemetry name: without the _total suffix and
// the unit suffix (the unit is the metric's Unit), "throng." for
// "throng_": throng_actions_total is throng.actions, throng_latency_seconds
// throng.latency, throng_process_cpu_user_seconds_total
// throng.process_cpu_user.
func OTelName(f Family) string {
	n := strings.TrimSuffix(f.Name, "_total")
	switch f.Unit {
	case "s":
		n = strings.TrimSuffix(n, "_seconds")
	case "By":
		n = strings.TrimSuffix(n, "_bytes")
	}
	return "throng." + strings.TrimPrefix(n, "throng_")
}

// ResourceMetrics renders families as OpenTelemetry metric data, the
// cumulative ones from start, all at now.
func ResourceMetrics(res *resource.Resource, fams []Family, start, now time.Time) *metricdata.ResourceMetrics {
	attrs := func(ls []Label) attribute.Set {
		kvs := make([]attribute.KeyValue, 0, len(ls))
		for _, l := range ls {
			if l.Value != "" {
				kvs = append(kvs, attribute.String(l.Name, l.Value))
			}
		}
		return attribute.NewSet(kvs...)
	}
	var ms []metricdata.Metrics
	for _, f := range fams {
		m := metricdata.Metrics{Name: OTelName(f), Description: f.Help, Unit: f.Unit}
		switch f.Kind {
		case Counter:
			sum := metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
			for _, s := range f.Series {
				sum.DataPoints = append(sum.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(s.Labels), StartTime: start, Time: now, Value: s.Value})
			}
			m.Data = sum
		case Gauge:
			g := metricdata.Gauge[float64]{}
			for _, s := range f.Series {
				g.DataPoints = append(g.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(s.Labels), Time: now, Value: s.Value})
			}
			m.Data = g
		case Histogram:
			h := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
			for _, s := range f.Series {
				cum := Cumulative(s.Hist, LatencyBounds)
				counts := make([]uint64, len(cum)+1)
				var prev uint64
				for i, c := range cum {
					counts[i], prev = c-prev, c
				}
				counts[len(cum)] = s.Hist.N - prev
				dp := metricdata.HistogramDataPoint[float64]{Attributes: attrs(s.Labels), StartTime: start, Time: now,
					Count: s.Hist.N, Sum: Seconds(s.Hist), Bounds: LatencyBounds, BucketCounts: counts}
				if s.Hist.N > 0 {
					dp.Min = metricdata.NewExtrema(float64(s.Hist.Min) / 1e6)
					dp.Max = metricdata.NewExtrema(float64(s.Hist.Max) / 1e6)
				}
				h.DataPoints = append(h.DataPoints, dp)
			}
			m.Data = h
		}
		ms = append(ms, m)
	}
	return &metricdata.ResourceMetrics{Resource: res, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "github.com/throng-io/throng"}, Metrics: ms}}}
}
