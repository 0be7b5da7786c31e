package engine

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

func TestBoundReasons(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		process bool
		cpu     float64
		threads []float64
		wait    waitFigures
		lag     time.Duration
		want    string
	}{
		{"idle", true, 0.3, nil, waitFigures{0.01, 0.003, 0.2, 0}, time.Millisecond, ""},
		{"process over 85% of 2 cores", true, 1.8, nil, waitFigures{}, 0, "generator CPU 90% of 2 cores"},
		{"process share ignored for event loops", false, 1.8, []float64{0.5}, waitFigures{}, 0, ""},
		{"one busy loop", false, 1.0, []float64{0.2, 0.97}, waitFigures{}, 0, "event loop 1 busy 97%"},
		{"starved by other processes", true, 0.9, nil, waitFigures{0.5, 0.9, 0.98, 0}, 0, "its threads waited for a CPU 50% of the time they had work"},
		// Each wake-up of an idle vCPU counted as a wait: a third of the
		// runnable time, withholding nothing, nearly idle or not.
		{"nearly idle on a VM", true, 0.02, nil, waitFigures{0.36, 0.011, 0.02, 0}, 0, ""},
		{"a log-on storm on a VM", true, 0.27, nil, waitFigures{0.37, 0.16, 0.22, 0}, 0, ""},
		{"lag", true, 0.1, nil, waitFigures{}, 45 * time.Millisecond, "scheduling lag p99 45 ms"},
		// A CPU quota withholds the CPU on an idle machine: its
		// throttling counts however busy the machine is.
		{"throttled by its cgroup on an idle machine", true, 0.05, nil, waitFigures{0.9, 0.3, 0.05, 0.6}, 0,
			"its CPU quota (cgroup) held it back 60% of the time"},
		{"throttled a little", true, 0.05, nil, waitFigures{0.02, 0.001, 0.05, 0.03}, 0, ""},
	} {
		got := strings.Join(boundReasons(tt.process, tt.cpu, 2, tt.threads, tt.wait, tt.lag), "; ")
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// spinDriver burns CPU in every action: a generator doing this is the
// bottleneck, and the run must say so.
type spinDriver struct{ sleepDriver }

func (d *spinDriver) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	return spinSession{}, nil
}

type spinSession struct{}

func (spinSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	end := time.Now().Add(2 * time.Millisecond)
	for time.Now().Before(end) {
	}
	return driver.Outcome{}, nil
}
func (spinSession) Close() error { return nil }

func TestClientBoundIsDetected(t *testing.T) {
	if testing.Short() {
		t.Skip("burns CPU for 1.5 s")
	}
	users := 2 * runtime.GOMAXPROCS(0)
	p := compile(t, "users: "+strconv.Itoa(users)+"\ninterval: 500ms\nphases: {steady: 1500ms}\nactions: [{name: a}]\n")
	out, err := Run(context.Background(), Config{Plan: p, Driver: &spinDriver{}, Actions: []driver.Action{"a"}, Kind: scenario.EngineGoroutines})
	if err != nil {
		t.Fatal(err)
	}
	rep := &result.Repetition{Intervals: out.Intervals}
	bound := 0
	for _, iv := range out.Intervals {
		if iv.Client.Bound {
			bound++
		}
	}
	if bound < 2 {
		t.Fatalf("%d of %d intervals client-bound while every user spun the CPU", bound, len(out.Intervals))
	}
	var msg string
	for _, tt := range result.ComputeTaints(rep) {
		if tt.Kind == "client_bound" {
			msg = tt.Message
		}
	}
	if !strings.Contains(msg, "measure the load generator, not the server") {
		t.Errorf("taint %q", msg)
	}
}

// A generator pinned to one CPU that busy loops keep busy, the machine's
// other CPU idle (half the machine busy), waiting for that CPU 97 % of the
// time it has work: starved, whatever the machine's share says (the
// starved-generator test's taskset path, which the machine's share missed).
func TestPinnedGeneratorStarvedOnItsCPU(t *testing.T) {
	t0 := time.Now()
	prev := sampler.SelfSample{At: t0, MachineBusy: 0, MachineAll: 0, CPUsBusy: 0, CPUsAll: 0}
	// One second: 200 ticks of the machine (2 CPUs), 100 busy, all on its
	// one CPU; its threads ran 10 ms and waited 323 ms.
	now := sampler.SelfSample{At: t0.Add(time.Second), MachineBusy: 100, MachineAll: 200, CPUsBusy: 100, CPUsAll: 100,
		TasksOnCPU: 10 * time.Millisecond, TasksWaiting: 323 * time.Millisecond}
	w := waitOf(prev, now)
	why := boundReasons(true, 0.01, 1, nil, w, time.Millisecond)
	if len(why) == 0 || !strings.Contains(why[0], "waited for a CPU 97%") {
		t.Errorf("figures %+v: reasons %q, want its wait for a CPU judged on its own CPU, 100 %% busy", w, why)
	}
}
