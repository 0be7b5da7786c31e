package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fakeRun builds a deterministic run: phases with known counts and
// latencies, two actions, one client-bound interval, some errors.
func fakeRun(reps int) *result.Run {
	run := &result.Run{Schema: result.Schema, Meta: result.Meta{
		Scenario: "demo", Label: "nginx 1.22", Target: "http://127.0.0.1:8080", Model: "closed",
		Users: 10, Segment: "1/1", Seed: 1, Speedup: 1, Engine: "io_uring", Threads: 2,
		Actions: []string{"page", "search"}, Runs: reps, Iterations: 0,
		Host: result.Host{Hostname: "box", Cores: 2}, Versions: result.Versions{Throng: "v0.1.0"},
		StartedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	}}
	for r := 0; r < reps; r++ {
		rep := result.Repetition{Index: r, ElapsedS: 4}
		for i, ph := range []string{"ramp-up", "steady", "steady", "ramp-down"} {
			iv := result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: ph, ActiveUsers: 10, UsersMean: 10, UsersMax: 10}
			iv.Client = result.Client{CPUCores: 0.5 + 0.1*float64(i), MachineBusy: 0.6}
			iv.Counters = []sampler.SourceValues{
				{Name: "system", Up: true, Values: map[string]float64{
					"cpus": 2, "cpu_user_seconds_total": 0.5 + 0.1*float64(i), "cpu_nice_seconds_total": 0,
					"cpu_system_seconds_total": 0.7, "cpu_irq_seconds_total": 0, "cpu_softirq_seconds_total": 0.1,
					"cpu_steal_seconds_total": 0, "context_switches_total": 8300 + 100*float64(i),
					"net_receive_bytes_total{if=lo}": 400_000, "net_transmit_bytes_total{if=lo}": 400_000,
					"disk_reads_total{dev=vda}": 0, "disk_writes_total{dev=vda}": 12, "page_faults_total": 432,
				}},
				{Name: "process nginx", Up: i != 3, Err: "no process named nginx", Values: map[string]float64{
					"process_cpu_user_seconds_total": 0.1, "process_cpu_system_seconds_total": 0.55,
					"process_rss_bytes": 11.5e6, "process_virtual_bytes": 61e6, "process_count": 2,
				}},
				{Name: "generator", Up: true, Values: map[string]float64{"process_cpu_user_seconds_total": 0.2, "process_cpu_system_seconds_total": 0.3}},
			}
			if i == 2 {
				iv.Client.Bound, iv.Client.BoundWhy = true, "event loop 0 busy 91%"
			}
			for a := 0; a < 2; a++ {
				var s metrics.ActionSnapshot
				n := uint64((1000 + 100*r) * (a + 1) / (1 + a*3))
				for k := uint64(0); k < n; k++ {
					s.Latency.Record(200 + k%300 + uint64(1000*a))
					s.Service.Record(150 + k%300)
				}
				s.Count, s.BytesIn, s.BytesOut = n, 236*n, 40*n
				if a == 1 {
					s.Errors[driver.Status5xx] = 3
					s.Messages[driver.Status5xx] = "HTTP status 503"
				}
				iv.Actions = append(iv.Actions, result.FromSnapshot(&s))
			}
			rep.Intervals = append(rep.Intervals, iv)
		}
		rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
		rep.Taints = result.ComputeTaints(&rep)
		run.Repetitions = append(run.Repetitions, rep)
	}
	if reps > 1 {
		run.Meta.Trim = 1
		run.Aggregate = compare.Aggregate(run.Repetitions, 1, false)
	}
	return run
}

func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", path, got)
	}
}

func TestTextOneRun(t *testing.T) {
	var b bytes.Buffer
	run := fakeRun(1)
	// Threshold outcomes kept in the result are printed as kept.
	run.Thresholds = []result.ThresholdOutcome{
		{Threshold: "p99 < 1ms", Phase: "steady", Pass: false, Message: "p99 in the steady phase is 1.487 ms: not < 1 ms"},
		{Threshold: "errors < 10", Phase: "steady", Pass: true, Message: "errors in the steady phase is 6, within < 10"},
	}
	if err := Text(&b, run); err != nil {
		t.Fatal(err)
	}
	golden(t, b.Bytes())
	for _, want := range []string{"ramp-up", "steady", "ramp-down", "all", "client-bound", "status_5xx errors: HTTP status 503", "1 of 2 intervals",
		"Verdict: NOT VALID", "fail     generator", "  FAIL  steady: p99 < 1ms — p99 in the steady phase is 1.487 ms", "  pass  steady: errors < 10"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestTextRepetitions(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, fakeRun(5)); err != nil {
		t.Fatal(err)
	}
	golden(t, b.Bytes())
	if !strings.Contains(b.String(), "mean of 3") || !strings.Contains(b.String(), "keeping runs 2, 3, 4") {
		t.Errorf("repetition table:\n%s", b.String())
	}
}

func TestTextPartial(t *testing.T) {
	run := fakeRun(1)
	run.Partial, run.Reason = true, "interrupted by SIGINT"
	var b bytes.Buffer
	Text(&b, run)
	if !strings.Contains(b.String(), "PARTIAL RESULT: interrupted by SIGINT") {
		t.Errorf("no partial line:\n%s", b.String())
	}
}

func TestNumberFormats(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{num(1234567), "1,234,567"}, {num(12.345), "12.3"}, {num(0.5), "0.500"}, {num(-4200), "-4,200"},
		{ms(0.1234, 1), "0.123 ms"}, {ms(12.34, 1), "12.3 ms"}, {ms(123.4, 1), "123 ms"}, {ms(2500, 1), "2.50 s"}, {ms(5, 0), "–"},
		{secs(9.5), "9.50 s"}, {secs(125), "2m05s"}, {pct(0.0123), "1.23%"}, {bytesRate(2.5e6), "2.50 MB/s"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// A driver's events (mail's deliver) are not the users' actions: the
// headline leaves them out of the actions and their latencies (a delivery
// seen at the next poll takes seconds), gives them a row of their own
// with the lost ones, and a phase where none was timed (deliveries found
// at the drain) shows no latency rather than 0 ms.
func TestTextEventsApart(t *testing.T) {
	run := &result.Run{Schema: result.Schema, Meta: result.Meta{
		Scenario: "mail", Target: "imap://127.0.0.1:1", Model: "open", Users: 10, Segment: "1/1", Seed: 1, Speedup: 1,
		Actions: []string{"browse", "deliver"}, Events: []string{"deliver"}, Runs: 1,
		Host: result.Host{Hostname: "box", Cores: 2}, StartedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	}}
	rep := result.Repetition{ElapsedS: 3}
	for i, ph := range []string{"steady", "steady", "drain"} {
		iv := result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: ph, UsersMean: 10, UsersMax: 10}
		var browse, deliver metrics.ActionSnapshot
		if ph == "steady" {
			for k := uint64(0); k < 100; k++ {
				browse.Latency.Record(2000 + k) // about 2 ms
				browse.Service.Record(2000 + k)
			}
			browse.Count = 100
			deliver.Latency.Record(30_000_000) // 30 s: seen at a poll
			deliver.Count = 1
		} else {
			deliver.Count = 7 // found by the drain, untimed; 2 of them lost
			deliver.Errors[driver.Lost] = 2
		}
		iv.Actions = []result.ActionInterval{result.FromSnapshot(&browse), result.FromSnapshot(&deliver)}
		rep.Intervals = append(rep.Intervals, iv)
	}
	rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
	run.Repetitions = []result.Repetition{rep}
	var b bytes.Buffer
	if err := Text(&b, run); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	line := func(prefix string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, prefix) {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("no line %q in:\n%s", prefix, out)
		return ""
	}
	if got := line("actions "); got != "actions 200 0 200" {
		t.Errorf("%q: the deliveries counted as actions", got)
	}
	if got := strings.TrimPrefix(line("latency (from schedule) max"), "latency (from schedule) max"); strings.Contains(got, " s") {
		t.Errorf("%q: a delivery's latency in the actions'", got)
	}
	if got := line("deliver (events)"); got != "deliver (events) 2 7, 2 lost 9, 2 lost" {
		t.Errorf("%+q", got)
	}
	for _, s := range rep.Summaries {
		if s.Phase == "drain" && (s.Actions[1].Timed() != 0 || ms(s.Actions[1].Latency.P50Ms, s.Actions[1].Timed()) != "–") {
			t.Errorf("drain: %d timed deliveries, p50 %q", s.Actions[1].Timed(), ms(s.Actions[1].Latency.P50Ms, s.Actions[1].Timed()))
		}
	}
}

// A files run over SMB: what the server negotiated is in the header, the
// family's default threshold is marked, and the data set kept from an
// earlier run says what was repaired.
func TestTextFiles(t *testing.T) {
	run := fakeRun(1)
	run.Meta.Driver = "files"
	run.Meta.Settings = map[string]string{"negotiated_dialect": "3.1.1", "signed": "false", "encrypted": "true"}
	run.Repetitions[0].Preparation = &result.Preparation{Users: 1, Items: 2, Bytes: 40976, ElapsedS: 0.01, MBps: 4.1,
		Method: "SMB create and write over 4 connections", Checked: 40, Repaired: 2,
		RepairedFiles: []string{"f00000005.bin: missing", "f00000009.bin: 100 bytes, 20488 expected"}}
	run.Thresholds = []result.ThresholdOutcome{{Threshold: "all: corrupt == 0", Phase: "all", Pass: false, Default: true,
		Message: "corrupt in the all phase is 3: not == 0"}}
	var b bytes.Buffer
	if err := Text(&b, run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nNegotiated with the server: SMB 3.1.1, not signed, encrypted.\n",
		"Data set before the run:\n  kept from an earlier run: 40 files checked by listing, 2 repaired, written again (41.0 KB in 0.01 s, 4.10 MB/s; " +
			"SMB create and write over 4 connections): f00000005.bin: missing; f00000009.bin: 100 bytes, 20488 expected.\n",
		"  FAIL  all: corrupt == 0 (default) — corrupt in the all phase is 3: not == 0\n" +
			"  (default): the files family judges every run by it; a threshold of yours on the same metric replaces it.\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	// More repaired than named: the count, and the first ones.
	run.Repetitions[0].Preparation.Repaired = 2000
	b.Reset()
	Text(&b, run)
	if !strings.Contains(b.String(), "2,000 repaired, written again (") || !strings.Contains(b.String(), "): the first 2: f00000005.bin: missing; f00000009.bin: 100 bytes, 20488 expected; and 1,998 more.") {
		t.Errorf("2,000 repaired:\n%s", b.String())
	}
	// A local target negotiates nothing: no such line.
	run.Meta.Settings = map[string]string{"protocol": "local file system"}
	b.Reset()
	Text(&b, run)
	if strings.Contains(b.String(), "Negotiated") {
		t.Errorf("a local target:\n%s", b.String())
	}
}
