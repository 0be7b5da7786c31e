package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/throng-io/throng/internal/agent"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// tokenEnv names the environment variable that may hold the shared token.
const tokenEnv = "THRONG_TOKEN"

// loadToken reads the shared token from a file, or from THRONG_TOKEN. The
// token is never printed.
func loadToken(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if len(t) < 16 {
			return nil, fmt.Errorf("token file %s: the token must be at least 16 characters (use a long random secret)", file)
		}
		return []byte(t), nil
	}
	if t := strings.TrimSpace(os.Getenv(tokenEnv)); t != "" {
		if len(t) < 16 {
			return nil, fmt.Errorf("%s: the token must be at least 16 characters", tokenEnv)
		}
		return []byte(t), nil
	}
	return nil, fmt.Errorf("no shared token: give --token-file FILE or set %s", tokenEnv)
}

func agentCommand(stderr io.Writer) *cobra.Command {
	var listen, tokenFile, dir string
	cmd := &cobra.Command{
		Use:   "agent --listen ADDR --token-file FILE",
		Short: "Serve as a load generator for a controller (throng run --agents)",
		Long: `Serve as a load generator: a controller (throng run SCENARIO --agents ...) sends
the plan and this agent runs its segment, streaming every interval back. Only a
controller that proves the shared token is served; anyone else is refused and
logged. One run at a time. A started run stops by itself when the controller
goes silent. The agent also keeps its own journal and result under --dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			token, err := loadToken(tokenFile)
			if err != nil {
				return badInput(err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return failure(fmt.Errorf("agent: %w", err))
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(stderr, "throng agent listening on %s (pid %d); results kept under %s\n", ln.Addr(), os.Getpid(), dir)
			srv := &agent.Server{Token: token, Runner: &agentRunner{dir: dir, log: stderr}, Log: stderr}
			return srv.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7070", "address to listen on")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the shared token (or set "+tokenEnv+")")
	cmd.Flags().StringVar(&dir, "dir", filepath.Join(os.TempDir(), "throng-agent"), "where the agent keeps its journals and results")
	return cmd
}

// agentRunner prepares and runs plans for the agent server.
type agentRunner struct {
	dir string
	log io.Writer
}

func (r *agentRunner) Prepare(ctx context.Context, req *agent.PlanRequest) (*agent.ReadyInfo, agent.Job, error) {
	s, decodeErrs, given, err := loadWithOverrides("", req.File, []byte(req.Source), req.Overrides)
	if err != nil {
		return nil, nil, err
	}
	seg, err := parseSegment(req.Segment, req.Weights)
	if err != nil {
		return nil, nil, err
	}
	given["--segment"] = req.Segment
	if req.Weights != "" {
		given["--weights"] = req.Weights
	}
	pr, err := prepare(s, seg, decodeErrs)
	if err != nil {
		return nil, nil, err
	}
	if err := preflight(ctx, pr); err != nil {
		pr.stop()
		return nil, nil, err
	}
	counters, err := counterSources(s)
	if err != nil {
		pr.stop()
		return nil, nil, err
	}
	meta := buildMeta(pr, given, seg)
	info := &agent.ReadyInfo{Host: meta.Host, Engine: meta.Engine, Threads: meta.Threads, SegmentUsers: len(pr.plan.Users)}
	return info, &agentJob{r: r, pr: pr, meta: meta, seg: seg, counters: counters}, nil
}

// agentJob is a prepared segment on an agent.
type agentJob struct {
	r        *agentRunner
	pr       *prepared
	meta     result.Meta // built before the start, so starting costs nothing
	seg      plan.Segment
	counters *sampler.Sampler
}

func (j *agentJob) Close() { j.pr.stop() }

func (j *agentJob) Run(ctx context.Context, startAt time.Time, emit func(*agent.Message)) error {
	out := filepath.Join(j.r.dir, fmt.Sprintf("%s-%s-%s.json", j.pr.s.Name, strings.ReplaceAll(j.seg.String(), "/", "of"),
		startAt.Format("20060102-150405")))
	if err := waitUntil(ctx, startAt, io.Discard); err != nil {
		return err
	}
	meta := j.meta
	meta.StartedAt = time.Now()
	emit(&agent.Message{Kind: agent.KindMeta, Meta: &meta})
	run, rec, err := execute(ctx, j.pr, j.counters, meta, out, hooks{
		repetitionStart: func(rep int, at time.Time) {
			if rep == 0 {
				// The load starts now: this is the instant the skew is measured at.
				emit(&agent.Message{Kind: agent.KindStarted, StartedAt: at})
			}
			emit(&agent.Message{Kind: agent.KindRepetition, Rep: rep, StartedAt: at})
		},
		interval: func(rep int, iv *result.Interval) {
			emit(&agent.Message{Kind: agent.KindInterval, Rep: rep, Interval: iv})
		},
		repetition: func(rep *result.Repetition) {
			end := *rep
			end.Intervals, end.Summaries = nil, nil
			emit(&agent.Message{Kind: agent.KindRepetitionEnd, Rep: rep.Index, RepEnd: &end})
		},
	})
	if run == nil {
		return err
	}
	where, _ := describeRecord(rec)
	fmt.Fprintf(j.r.log, "throng agent: segment %s done. %s\n", j.seg, where)
	emit(&agent.Message{Kind: agent.KindEnd, Partial: run.Partial, Reason: run.Reason})
	return err
}

// runDistributed is `throng run SCENARIO --agents ...`: this process is the
// controller; the agents run the load.
func runDistributed(s *scenario.Scenario, decodeErrs scenario.Errors, ovs []agent.Override, f *runFlags, stdout, stderr io.Writer) error {
	if f.segment != "1/1" || f.startAt != "" {
		return badInput(errors.New("--agents splits the plan itself: do not give --segment or --start-at"))
	}
	if s.Target == "embedded" {
		return badInput(errors.New("a distributed run needs a real target that every agent reaches: give --target URL (throng serve web runs the reference server on its own)"))
	}
	ws, err := plan.ParseWeights(f.weights)
	if err != nil {
		return badInput(fmt.Errorf("--weights: %w", err))
	}
	if len(ws) > 0 && len(ws) != len(f.agents) {
		return badInput(fmt.Errorf("--weights has %d values for %d agents", len(ws), len(f.agents)))
	}
	// Check the whole scenario here first, so mistakes are reported once.
	pr, err := prepare(s, plan.Whole, decodeErrs)
	if err != nil {
		return err
	}
	pr.stop()
	token, err := loadToken(f.tokenFile)
	if err != nil {
		return badInput(err)
	}
	out := f.out
	if out == "" {
		out = defaultOut(s.Name)
	}
	jpath := result.JournalPath(out)
	j, err := result.CreateJournal(jpath)
	if err != nil {
		return failure(fmt.Errorf("%s: %w", jpath, err))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	interrupted := stopOnSignal(cancel, stderr)
	lv := newLive(stderr, pr.plan, s.Runs, f.quiet)
	c := &agent.Controller{
		Agents: f.agents, Weights: ws, Token: token, Log: stderr, DialWait: f.agentsWait,
		Plan:   agent.PlanRequest{File: s.File, Source: string(s.Source), Overrides: ovs, Label: s.Label},
		OnMeta: func(m *result.Meta) { j.Meta(m) },
		OnRepetitionStart: func(rep int, at time.Time) {
			j.Repetition(rep, at)
		},
		OnInterval: func(rep int, iv *result.Interval) {
			j.Interval(rep, iv)
			lv.interval(rep, iv)
		},
	}
	run, err := c.Run(ctx)
	lv.done()
	if err != nil {
		j.End(true, err.Error())
		j.Close()
		return failure(err)
	}
	for i := range run.Repetitions {
		j.RepetitionEnd(&run.Repetitions[i])
	}
	j.End(run.Partial, run.Reason)
	rec := &runner.Record{Out: out, Journal: jpath}
	rec.Result, rec.ResultErr = result.Save(out, run, func() result.Source { return result.MemorySource(run) })
	rec.JournalState = j.State()
	rec.JournalErr = j.Close()
	return finishRun(run, rec, nil, interrupted(), pr.thresholds, f.junit, stdout)
}
