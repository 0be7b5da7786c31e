package output

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// RemoteWriteTokenEnv names the environment variable whose value, when
// set, RemoteWrite sends as a bearer token (Authorization: Bearer TOKEN).
const RemoteWriteTokenEnv = "THRONG_REMOTE_WRITE_TOKEN"

// RemoteWrite pushes the run's cumulative state to a Prometheus
// remote-write receiver (protocol 1.0: a snappy-compressed protobuf
// WriteRequest, prompb) after every interval, stamped with the interval's
// end. Histograms go as classic series (_bucket{le}, _sum, _count), which
// every receiver takes.
type RemoteWrite struct {
	url    string
	token  string
	state  *State
	client *http.Client
}

// NewRemoteWrite returns a sink writing to url (like
// http://127.0.0.1:9090/api/v1/write) for run, with the bearer token in
// $THRONG_REMOTE_WRITE_TOKEN when it is set.
func NewRemoteWrite(url string, run Run) *RemoteWrite {
	return &RemoteWrite{url: url, token: os.Getenv(RemoteWriteTokenEnv), state: NewState(run), client: &http.Client{Timeout: 10 * time.Second}}
}

// Write adds the interval to the state and sends every series.
func (r *RemoteWrite) Write(ctx context.Context, iv *Interval) error {
	r.state.Add(iv)
	req := WriteRequest(r.state.Families(), iv.End)
	pb, err := req.Marshal()
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(snappy.Encode(nil, pb)))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	if r.token != "" {
		hreq.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return fmt.Errorf("remote write: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}

// Close does nothing: every Write sent everything.
func (r *RemoteWrite) Close(context.Context) error { return nil }

// WriteRequest renders families as one remote-write request at time at.
func WriteRequest(fams []Family, at time.Time) *prompb.WriteRequest {
	ts := at.UnixMilli()
	req := &prompb.WriteRequest{}
	add := func(name string, ls []Label, v float64, extra ...prompb.Label) {
		labels := []prompb.Label{{Name: "__name__", Value: name}}
		for _, l := range ls {
			if l.Value != "" { // an empty label is no label
				labels = append(labels, prompb.Label{Name: l.Name, Value: l.Value})
			}
		}
		labels = append(labels, extra...)
		sort.Slice(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name })
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labels, Samples: []prompb.Sample{{Value: v, Timestamp: ts}}})
	}
	for _, f := range fams {
		for _, s := range f.Series {
			if f.Kind != Histogram {
				add(f.Name, s.Labels, s.Value)
				continue
			}
			for i, c := range Cumulative(s.Hist, LatencyBounds) {
				add(f.Name+"_bucket", s.Labels, float64(c), prompb.Label{Name: "le", Value: strconv.FormatFloat(LatencyBounds[i], 'g', -1, 64)})
			}
			add(f.Name+"_bucket", s.Labels, float64(s.Hist.N), prompb.Label{Name: "le", Value: "+Inf"})
			add(f.Name+"_sum", s.Labels, Seconds(s.Hist))
			add(f.Name+"_count", s.Labels, float64(s.Hist.N))
		}
	}
	return req
}
