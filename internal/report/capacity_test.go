package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// capacityRecord is a search for the most users meeting p95 < 1s and
// error_rate < 0.1% on a made-up server whose p95 reaches 1 s at 6,200
// users and whose CPU reaches 94 % at 6,400: the search's own steps, one
// of them invalid (the generator), written down.
func capacityRecord(t *testing.T) *capacity.Record {
	var slos []threshold.Threshold
	for _, s := range []string{"p95 < 1s", "error_rate < 0.1%"} {
		th, err := threshold.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		slos = append(slos, th)
	}
	cfg := capacity.Config{SLOs: slos, Dimension: capacity.Users, Min: 100, Max: 20000, StepDuration: 30 * time.Second,
		MaxTime: 20 * time.Minute}
	run := func(r capacity.Request, i int) capacity.Step {
		x := r.Load / 6200
		p95 := 200 + 800*math.Pow(x, 8)
		st := capacity.Step{Request: r, Elapsed: r.Duration + 3*time.Second, Counters: capacity.NaNCounters(),
			SLOs:       []capacity.Figure{{Value: p95, HalfWidth: 0.02 * p95}, {Value: 0.0002 * x * x, HalfWidth: 0.00003}},
			Throughput: math.Min(0.5*r.Load, 2400), Users: r.Load, Count: uint64(30 * math.Min(0.5*r.Load, 2400)),
			Latency: result.Latency{MeanMs: 0.7 * p95, P50Ms: 0.5 * p95, P95Ms: p95, P99Ms: 1.4 * p95}}
		st.Errors = uint64(float64(st.Count) * 0.0002 * x * x)
		st.ErrorsByClass = map[string]uint64{"status": st.Errors}
		st.Concurrency = st.Throughput * st.Latency.MeanMs / 1000
		st.Counters.ServerCPU = math.Min(1, 0.94*r.Load/6400)
		st.Counters.ServerCores = 4 * st.Counters.ServerCPU
		st.Counters.GeneratorCPU = 0.05 + r.Load/200000
		if i == 5 {
			st.Invalid = []capacity.Invalid{{Kind: capacity.GeneratorBound,
				Why: "the load generator was the bottleneck in 2 of 30 intervals (its threads waited for a CPU 41% of the time they had work): there the figures measure it, not the server"}}
		}
		return st
	}
	var steps []capacity.Step
	for i := range 30 {
		d := capacity.Decide(cfg, steps)
		if d.Done {
			rec := capacity.NewRecord(cfg, steps, nil, *d.Answer)
			rec.Scenario, rec.Target = "loadsim-online", "imap://10.0.0.5:143?smtp=10.0.0.5:25"
			rec.StartedAt = time.Date(2026, 11, 21, 13, 2, 0, 0, time.UTC)
			return &rec
		}
		steps = append(steps, run(d.Next, i))
	}
	t.Fatal("the search did not end")
	return nil
}

func TestCapacityText(t *testing.T) {
	rec := capacityRecord(t)
	var b bytes.Buffer
	if err := CapacityText(&b, rec); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n--- live lines\n")
	for i := range rec.Steps {
		b.WriteString(CapacityLine(&rec.Config, i+1, &rec.Steps[i]) + "\n")
	}
	golden(t, b.Bytes())
	// The statement as the issue writes it: thousands separated, the
	// interval, the SLOs, the first limit.
	if !strings.Contains(b.String(), "first limit: server CPU (94 % at 6,400 users)") || !strings.Contains(b.String(), "capacity: 6,") {
		t.Errorf("the statement: %s", rec.Statement)
	}
}

// A search that found nothing: no fit, no costs, figures missing.
func TestCapacityTextNothingFound(t *testing.T) {
	th, _ := threshold.Parse("loss == 0")
	cfg := capacity.Config{SLOs: []threshold.Threshold{th}, Dimension: capacity.Rate, Min: 10, Max: 1000, NoWarmUp: true}
	st := capacity.Step{Request: capacity.Request{Kind: capacity.Bracket, Load: 10, Duration: 30 * time.Second, Why: "first step at --min, 10/s"},
		Counters: capacity.NaNCounters(), SLOs: []capacity.Figure{{Value: 3}}, Throughput: 9.7, Count: 291, Errors: 3,
		ErrorsByClass: map[string]uint64{"lost": 3}, Dropped: 2}
	steps := []capacity.Step{st}
	rec := capacity.NewRecord(cfg, steps, nil, capacity.Conclude(cfg, steps))
	var b bytes.Buffer
	if err := CapacityText(&b, &rec); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n--- live line\n" + CapacityLine(&rec.Config, 1, &rec.Steps[0]) + "\n")
	golden(t, b.Bytes())
}

// A search over agents, its data set prepared once: the text names the
// agents and gives the preparation among the search's decisions, and the
// record reads back with both.
func TestCapacityTextAgentsAndPopulation(t *testing.T) {
	rec := capacityRecord(t)
	rec.Agents = []string{"gen1:7070", "gen2:7070"}
	rec.Population = &capacity.RecordPopulation{Load: 20000, Users: 20000, Items: 2e6, Checks: len(rec.Steps), Failed: 1,
		Why: "the data set prepared once, for the largest load, 20,000 users, in 4m0s; each step checks it instead of writing it again"}
	var b bytes.Buffer
	if err := CapacityText(&b, rec); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"every step over 2 agents: gen1:7070, gen2:7070",
		fmt.Sprintf("  –  prepare  the data set prepared once, for the largest load, 20,000 users, in 4m0s; each step checks it instead of writing it again (checked before %d steps; 1 found it gone or changed)", len(rec.Steps))} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
	var j bytes.Buffer
	if err := capacity.WriteRecord(&j, rec); err != nil {
		t.Fatal(err)
	}
	back, err := capacity.ReadRecord(&j)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Agents) != 2 || back.Population == nil || *back.Population != *rec.Population {
		t.Errorf("read back: agents %q, population %+v", back.Agents, back.Population)
	}
}

// The live line says the server's CPU ceiling when it is not its
// machine's, and its quota's throttling under a quota.
func TestCapacityLineCeiling(t *testing.T) {
	rec := capacityRecord(t)
	s := rec.Steps[1]
	for _, c := range []struct {
		by        string
		ceiling   float64
		throttled float64
		want      string
	}{
		{"machine", 4, math.NaN(), "server CPU 29 % · "},
		{"threads", 1, math.NaN(), "server CPU 29 % of one thread · "},
		{"quota", 0.2, 0.15, "server CPU 29 % of a 0.2-core CPU quota, throttled 15 % · "},
		{"", 0, 0, "server CPU 29 % · "}, // a record written before the ceiling was
	} {
		s.Counters.ServerCPU, s.Counters.ServerCeilingBy = 0.29, c.by
		s.Counters.ServerCeiling, s.Counters.ServerThrottled = result.Num(c.ceiling), result.Num(c.throttled)
		if got := CapacityLine(&rec.Config, 2, &s); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %q in it", c.by, got, c.want)
		}
	}
}
