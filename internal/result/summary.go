package result

import (
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
)

// Summary is one phase of a repetition (or "all" of it): the figures of
// each action and of the users' actions together, from the merged intervals.
type Summary struct {
	Phase          string  `json:"phase"`
	StartS         float64 `json:"start_s"`
	DurationS      float64 `json:"duration_s"`
	Intervals      int     `json:"intervals"`
	UsersMean      float64 `json:"users_mean"`
	UsersMax       int     `json:"users_max"`
	ClientCPUMean  float64 `json:"client_cpu_cores_mean"`
	ClientCPUMax   float64 `json:"client_cpu_cores_max"`
	MachineBusy    float64 `json:"machine_busy_mean"`
	BoundIntervals int     `json:"client_bound_intervals"`
	// Actions has one summary per action, the driver's events last; Total
	// merges the users' actions only, with every action's bytes: a
	// message's delivery or a subscriber's connection is not an action of a
	// user, and its latency (seconds, for mail waiting for a poll) would
	// swamp the actions'.
	Actions []ActionSummary `json:"actions"`
	Total   ActionSummary   `json:"total"`
	// Counters summarizes each counter source (mean and peak per series),
	// Server the seed-named rows and the cost rows derived from them.
	Counters []CounterSummary `json:"counters,omitempty"`
	Server   []Row            `json:"server,omitempty"`
}

// ActionSummary is what one action (or all of them) did in a phase.
type ActionSummary struct {
	Name   string `json:"name"`
	Count  uint64 `json:"count"` // finished, successful or not
	OK     uint64 `json:"ok"`
	Errors uint64 `json:"errors"`
	// Skipped were not attempted (no server for them: calendar actions
	// without CalDAV): counted here alone, in no other figure — not in
	// Count, the rates, the percentiles nor the errors.
	Skipped       uint64            `json:"skipped,omitempty"`
	Dropped       uint64            `json:"dropped"`
	Untimed       uint64            `json:"untimed,omitempty"` // finished without a latency: a delivery found at the drain, a lost one
	ErrorRate     float64           `json:"error_rate"`        // errors / count
	RatePerS      float64           `json:"rate_per_s"`        // finished per second
	OKPerS        float64           `json:"ok_per_s"`
	BytesInPerS   float64           `json:"bytes_in_per_s"`
	BytesOutPerS  float64           `json:"bytes_out_per_s"`
	ErrorsByClass map[string]uint64 `json:"errors_by_class,omitempty"`
	Messages      map[string]string `json:"messages,omitempty"`
	Latency       Latency           `json:"latency"` // from the scheduled start
	Service       Latency           `json:"service"` // from the actual start
}

// Timed is how many of the finished actions have a latency: the count the
// percentiles are of.
func (a *ActionSummary) Timed() uint64 { return a.Count - min(a.Untimed, a.Count) }

// Latency is a distribution's summary in milliseconds.
type Latency struct {
	MeanMs float64 `json:"mean_ms"`
	MinMs  float64 `json:"min_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p99_9_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// LatencyOf summarizes a histogram in microseconds as milliseconds.
func LatencyOf(h *metrics.Hist) Latency {
	if h.N == 0 {
		return Latency{}
	}
	ms := func(us uint64) float64 { return float64(us) / 1000 }
	return Latency{
		MeanMs: h.Mean() / 1000,
		MinMs:  ms(h.Min),
		P50Ms:  ms(h.Quantile(0.50)),
		P90Ms:  ms(h.Quantile(0.90)),
		P95Ms:  ms(h.Quantile(0.95)),
		P99Ms:  ms(h.Quantile(0.99)),
		P999Ms: ms(h.Quantile(0.999)),
		MaxMs:  ms(h.Max),
	}
}

// Snapshot converts the stored form back to a mergeable snapshot.
func (ai *ActionInterval) Snapshot() metrics.ActionSnapshot {
	s := metrics.ActionSnapshot{
		Count: ai.Count, Dropped: ai.Dropped, BytesIn: ai.BytesIn, BytesOut: ai.BytesOut,
		Latency: ai.Latency, Service: ai.Service,
	}
	for name, n := range ai.Errors {
		if c, ok := driver.ClassByName(name); ok {
			s.Errors[c] += n
		}
	}
	for name, m := range ai.Messages {
		if c, ok := driver.ClassByName(name); ok {
			s.Messages[c] = m
		}
	}
	return s
}

// FromSnapshot converts a snapshot to its stored form.
func FromSnapshot(s *metrics.ActionSnapshot) ActionInterval {
	ai := ActionInterval{Count: s.Count, Dropped: s.Dropped, BytesIn: s.BytesIn, BytesOut: s.BytesOut,
		Latency: s.Latency, Service: s.Service}
	for c := driver.Class(1); c < driver.NumClasses; c++ {
		if s.Errors[c] > 0 {
			if ai.Errors == nil {
				ai.Errors = map[string]uint64{}
			}
			ai.Errors[c.String()] = s.Errors[c]
		}
		if s.Messages[c] != "" {
			if ai.Messages == nil {
				ai.Messages = map[string]string{}
			}
			ai.Messages[c.String()] = s.Messages[c]
		}
	}
	return ai
}

func summarizeAction(name string, s *metrics.ActionSnapshot, seconds float64) ActionSummary {
	errs := s.ErrorCount()
	skipped := s.Errors[driver.Skipped]
	as := ActionSummary{
		Name: name, Count: s.Count, Errors: errs, Skipped: skipped, OK: s.Count - min(errs, s.Count), Dropped: s.Dropped,
		Latency: LatencyOf(&s.Latency), Service: LatencyOf(&s.Service),
	}
	if s.Latency.N < s.Count {
		as.Untimed = s.Count - s.Latency.N
	}
	if s.Count > 0 {
		as.ErrorRate = float64(errs) / float64(s.Count)
	}
	if seconds > 0 {
		as.RatePerS = float64(s.Count) / seconds
		as.OKPerS = float64(as.OK) / seconds
		as.BytesInPerS = float64(s.BytesIn) / seconds
		as.BytesOutPerS = float64(s.BytesOut) / seconds
	}
	for c := driver.Class(1); c < driver.NumClasses; c++ {
		if s.Errors[c] > 0 && c != driver.Skipped { // not an error: Skipped
			if as.ErrorsByClass == nil {
				as.ErrorsByClass = map[string]uint64{}
			}
			as.ErrorsByClass[c.String()] = s.Errors[c]
		}
		if s.Messages[c] != "" {
			if as.Messages == nil {
				as.Messages = map[string]string{}
			}
			as.Messages[c.String()] = s.Messages[c]
		}
	}
	return as
}

// Summarize computes one Summary per phase, in the order the phases first
// appear, then one for the whole repetition (phase "all"). The last events
// of actions are the driver's events (Meta.Events), left out of the totals.
func Summarize(actions []string, events int, intervals []Interval) []Summary {
	s := NewSummarizer(actions, events)
	for i := range intervals {
		s.Add(&intervals[i])
	}
	return s.Summaries()
}

// FindRow returns the row with an id, or nil.
func (s *Summary) FindRow(id string) *Row {
	for i := range s.Server {
		if s.Server[i].ID == id {
			return &s.Server[i]
		}
	}
	return nil
}

// Find returns the summary of a phase, or nil.
func Find(sums []Summary, phase string) *Summary {
	for i := range sums {
		if sums[i].Phase == phase {
			return &sums[i]
		}
	}
	return nil
}
