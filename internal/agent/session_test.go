package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
)

// keepRunner is fakeRunner with a data set: PreparePopulation counts what
// it is asked; a plan that keeps the data set runs while it is there, and
// fails as a run whose data set is gone (runner.PopulationError) once
// gone is set.
type keepRunner struct {
	fakeRunner
	prepared atomic.Int32
	gone     atomic.Bool
}

func (r *keepRunner) PreparePopulation(ctx context.Context, req *PlanRequest) (*PreparedInfo, error) {
	seg, err := req.segment()
	if err != nil {
		return nil, err
	}
	r.prepared.Add(1)
	return &PreparedInfo{Users: users(seg), Items: int64(10 * users(seg)), Method: "fake"}, nil
}

func (r *keepRunner) Prepare(ctx context.Context, req *PlanRequest) (*ReadyInfo, Job, error) {
	info, job, err := r.fakeRunner.Prepare(ctx, req)
	if err != nil || !req.KeepPopulation || !r.gone.Load() {
		return info, job, err
	}
	return info, goneJob{}, nil
}

// goneJob is a run whose check finds the data set gone: it sends its
// metadata, then fails before any load.
type goneJob struct{}

func (goneJob) Run(ctx context.Context, startAt time.Time, emit func(*Message)) error {
	emit(&Message{Kind: KindMeta, Meta: &result.Meta{Scenario: "fake", Segment: "1/2", Runs: 1}})
	return &runner.PopulationError{Err: errors.New("the population prepared for the search is gone")}
}

func (goneJob) Close() {}

// A session (protocol 3) runs several plans over the same connections: the
// agents' data set prepared once (each its segment), three runs, each
// merged from both agents, one connection to each agent for all of it. A
// run whose data set is found gone fails with a *runner.PopulationError
// naming the agents, and the session goes on: the next plan runs.
func TestSessionRunsSeveralPlans(t *testing.T) {
	r := &keepRunner{fakeRunner: fakeRunner{intervals: 3}}
	addrs, log := startAgents(t, 2, r, token)
	c := &Controller{Agents: addrs, Token: token}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	infos, err := s.PreparePopulation(ctx, PlanRequest{Source: "users: 12"})
	if err != nil || len(infos) != 2 || infos[0].Users+infos[1].Users != 12 || r.prepared.Load() != 2 {
		t.Fatalf("prepared %+v (%d asked): %v; want each agent its 6 users", infos, r.prepared.Load(), err)
	}
	for i := range 3 {
		run, err := s.Run(ctx, PlanRequest{Source: "users: 12", KeepPopulation: true, RunID: fmt.Sprint("run-", i)})
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		all := result.Find(run.Repetitions[0].Summaries, result.All)
		if all.Total.Count != 12*10*3 || run.Partial || len(run.Agents) != 2 {
			t.Fatalf("run %d: count %d, partial %v (%s), %d agents", i+1, all.Total.Count, run.Partial, run.Reason, len(run.Agents))
		}
	}
	r.gone.Store(true)
	_, err = s.Run(ctx, PlanRequest{Source: "users: 12", KeepPopulation: true})
	var pe *runner.PopulationError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "gone") || !strings.Contains(err.Error(), addrs[0]) {
		t.Fatalf("a run whose data set is gone: %v, want a population error naming the agents", err)
	}
	if _, err := s.Run(ctx, PlanRequest{Source: "users: 12"}); err != nil {
		t.Fatalf("the run after it: %v", err)
	}
	if s.Connections != 2 {
		t.Errorf("%d connections for a session over 2 agents", s.Connections)
	}
	s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(log.String(), "session done") < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n, runs := strings.Count(log.String(), " connected\n"), strings.Count(log.String(), "run done"); n != 2 || runs != 2*4 {
		t.Errorf("the agents logged %d sessions and %d runs done, want 2 sessions of 4 runs each:\n%s", n, runs, log)
	}
}
