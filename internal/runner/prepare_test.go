package runner

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/pubsub"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

func webPreparer() *Preparer {
	return &Preparer{Families: []driver.Family{web.Family(), pubsub.Family()}, Version: "v0-test"}
}

func source(text string) Source { return Source{File: "t.yaml", Text: []byte(text)} }

// runJob runs a prepared job to its end and returns its result.
func runJob(t *testing.T, j *Job) *result.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, _, err := Run(ctx, j.Config(j.Meta(), filepath.Join(t.TempDir(), "r.json")))
	if err != nil || run == nil {
		t.Fatalf("run: %v", err)
	}
	return run
}

// A capacity search prepares many jobs from one source, with different
// load settings, against one server kept warm: the embedded server is
// started once (StartEmbedded), given to every Request, left running by
// each job's Close, and stopped by its caller at the end.
func TestOneTargetForManyJobs(t *testing.T) {
	prep := webPreparer()
	tgt, err := prep.StartEmbedded("web", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	src := source("users: 1\nclosed: {iterations: 10}\ninterval: 100ms\nactions: [{path: /}]\n")
	var targets []string
	for _, users := range []string{"2", "5"} {
		j, err := prep.Prepare(context.Background(), Request{Source: src, Settings: []Setting{{Key: "users", Value: users}}, Target: tgt})
		if err != nil {
			t.Fatal(err)
		}
		run := runJob(t, j)
		j.Close()
		all := result.Find(run.Repetitions[0].Summaries, result.All)
		if want := map[string]uint64{"2": 20, "5": 50}[users]; all.Total.Count != want || all.Total.Errors != 0 {
			t.Errorf("users %s: %d actions, %d errors; want %d, none", users, all.Total.Count, all.Total.Errors, want)
		}
		if run.Meta.Overrides["users"] != users {
			t.Errorf("users %s: recorded %v", users, run.Meta.Overrides)
		}
		targets = append(targets, run.Meta.Target)
		// The job's Close left the server running.
		resp, err := http.Get(tgt.URL() + "/")
		if err != nil {
			t.Fatalf("after a job closed, the shared server is gone: %v", err)
		}
		resp.Body.Close()
	}
	if targets[0] != targets[1] || targets[0] != "embedded web server at "+tgt.URL() {
		t.Errorf("targets %q, want both the one server %s", targets, tgt.URL())
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(tgt.URL() + "/"); err == nil {
		resp.Body.Close()
		t.Error("the server still answers after its Close")
	}
}

// recordingTarget is an embedded server that only says whether it was
// closed.
type recordingTarget struct{ closed *int }

func (recordingTarget) URL() string    { return "http://127.0.0.1:9" }
func (r recordingTarget) Close() error { *r.closed++; return nil }

// A job started its own embedded server: a preparation that fails after
// (a bad action) stops it, and Close stops it once.
func TestFailedPrepareStopsItsServer(t *testing.T) {
	prep := webPreparer()
	closed, started := 0, 0
	prep.Families[0].Embedded = func(string) (driver.Target, error) {
		started++
		return recordingTarget{&closed}, nil
	}
	_, err := prep.Prepare(context.Background(), Request{Source: source("users: 1\nclosed: {iterations: 1}\nactions: [{path: /, method: \"BAD METHOD\"}]\n")})
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != BadInput || started != 1 || closed != 1 {
		t.Fatalf("err %v, %d started, %d closed", err, started, closed)
	}
	j, err := prep.Prepare(context.Background(), Request{Source: source("users: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Target.Embedded() || closed != 1 {
		t.Fatalf("embedded %v, closed %d", j.Target.Embedded(), closed)
	}
	j.Close()
	j.Close()
	if closed != 2 {
		t.Errorf("closed %d times, want once more", closed)
	}
}

// A preparation that fails after the driver's block was decoded keeps
// nothing of it: a long-lived agent refusing plan after plan does not
// grow. (The pub/sub driver's counter source used to stay in a
// package-level map, keyed by the block, for every failed preparation.)
func TestFailedPreparesLeakNothing(t *testing.T) {
	prep := webPreparer()
	// A big block (16 KB of comment), so that one kept shows.
	src := "users: 2\nclosed: {iterations: 1}\ntarget: nats://127.0.0.1:9\npubsub:\n  # " + strings.Repeat("padding ", 2000) + "\n  subjects: 4\nactions:\n  - {name: pub, op: nope}\n"
	fail := func() {
		_, err := prep.Prepare(context.Background(), Request{Source: source(src)})
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != BadInput || !strings.Contains(err.Error(), "actions[0]") {
			t.Fatalf("want a bad action: %v", err)
		}
	}
	fail()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const n = 200
	for range n {
		fail()
	}
	grown := int64(heap()) - int64(before)
	t.Logf("heap grew by %d bytes over %d failed preparations", grown, n)
	if grown > 16*int64(len(src))*n/100 {
		t.Errorf("heap grew by %d bytes over %d failed preparations (%d per preparation)", grown, n, grown/n)
	}
}

// Settings: every key a setting may change, the rules that join them, the
// record the result keeps, and where a wrong one is said to come from.
func TestSettings(t *testing.T) {
	prep := webPreparer()
	load := func(text string, settings ...Setting) (*Loaded, error) {
		return prep.Load(Request{Source: source(text), Settings: settings})
	}
	const closed = "users: 1\nclosed: {total: 100}\nactions: [{path: /}]\n"
	l, err := load(closed, Setting{Key: "closed.iterations", Value: "7"}, Setting{Key: "users", Value: "3"},
		Setting{Key: "thresholds", Value: "p95 < 1s"}, Setting{Key: "thresholds", Value: "p99 < 2s"})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Scenario
	if s.Closed.Iterations != 7 || s.Closed.Total != 0 || s.Users != 3 || len(s.Thresholds) != 2 {
		t.Errorf("iterations %d total %d users %d thresholds %v", s.Closed.Iterations, s.Closed.Total, s.Users, s.Thresholds)
	}
	if l.given["closed.iterations"] != "7" || l.given["users"] != "3" || l.given["thresholds"] != "p95 < 1s,p99 < 2s" || len(l.given) != 3 {
		t.Errorf("record %v", l.given)
	}
	// open.rate gives the variable rate of a scenario that declares one.
	const withRate = "vars: {rate: 1/s}\nusers: 1\nmodel: open\nopen: {rate: $rate}\nphases: {steady: 1s}\nactions: [{path: /}]\n"
	l, err = load(withRate, Setting{Key: "open.rate", Value: "9/s", From: "flag --rate"})
	if err != nil || l.Scenario.Open.Rate.PerSecond != 9 || l.given["vars.rate"] != "9/s" || len(l.given) != 1 {
		t.Errorf("rate by its variable: %v %v %v", err, l.Scenario.Open.Rate, l.given)
	}
	// Where a wrong value came from: its From, or "settings".
	for _, tc := range []struct {
		st   Setting
		want string
	}{
		{Setting{Key: "users", Value: "many", From: "flag --users"}, `flag --users: users: "many" is not a whole number`},
		{Setting{Key: "users", Value: "many"}, `settings: users: "many" is not a whole number`},
		{Setting{Key: "vars.nope", Value: "1"}, `settings: vars.nope: the scenario has no variable "nope"`},
		{Setting{Key: "--users", Value: "1"}, `settings: "--users" is not a key a setting may change`},
		{Setting{Key: "vars.", Value: "1", From: "flag --set"}, `flag --set: "vars." names no variable`},
	} {
		_, err := prep.Prepare(context.Background(), Request{Source: source(closed), Settings: []Setting{tc.st}})
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != BadInput || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v\nwant %q", tc.st, err, tc.want)
		}
	}
}

// Every key the settings document may be set, and nothing else.
func TestCheckKey(t *testing.T) {
	for _, k := range append(append([]string{"vars.size"}, scalarKeys...), listKeys...) {
		if err := CheckKey(k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, k := range []string{"", "user", "--users", "phases", "vars", "vars.", "vars.a.b", "actions[0].rate"} {
		if CheckKey(k) == nil {
			t.Errorf("%q accepted", k)
		}
	}
	// Each scalar key is a path of the scenario (Set panics on another).
	src := source("users: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\n")
	for _, k := range scalarKeys {
		l, err := webPreparer().Load(Request{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		l.Scenario.Set(k, scenario.Given{Text: "1", From: "settings"})
	}
}

// A Request's Target is the job's, whatever the scenario says, and must be
// of the scenario's family.
func TestRequestTargetFamily(t *testing.T) {
	prep := webPreparer()
	tgt, err := prep.StartEmbedded("pubsub", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	_, err = prep.Prepare(context.Background(), Request{Source: source("users: 1\nclosed: {iterations: 1}\nweb: {}\nactions: [{path: /}]\n"), Target: tgt})
	if err == nil || !strings.Contains(err.Error(), "the target is an embedded pubsub server, not of the web family") {
		t.Errorf("%v", err)
	}
}
