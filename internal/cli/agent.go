package cli

import (
	"context"
	"crypto/tls"
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
	"github.com/spf13/pflag"

	"github.com/throng-io/throng/internal/agent"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/secret"
)

// tokenEnv names the environment variable that may hold the shared token.
const tokenEnv = "THRONG_TOKEN"

// maxTokenFile bounds a token file read.
const maxTokenFile = 64 << 10

// loadToken reads the shared token from a file (a regular file, bounded),
// or from THRONG_TOKEN. The token is never printed. A token file that its
// group or others may read gets a warning on warn: whoever reads it can
// run load from the agents.
func loadToken(file string, warn io.Writer) ([]byte, error) {
	if file != "" {
		b, err := secret.ReadFile(file, maxTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file %s: %v", file, err)
		}
		t := strings.TrimSpace(string(b))
		if len(t) < 16 {
			return nil, fmt.Errorf("--token-file %s: the token must be at least 16 characters (use a long random secret)", file)
		}
		warnReadable(warn, file, "token file", "whoever can read it can run load from the agents")
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

// warnReadable warns when the group or others may read a secret file.
func warnReadable(w io.Writer, file, what, why string) {
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	who := "others"
	switch {
	case fi.Mode().Perm()&0o070 != 0 && fi.Mode().Perm()&0o007 != 0:
		who = "its group and others"
	case fi.Mode().Perm()&0o070 != 0:
		who = "its group"
	}
	fmt.Fprintf(w, "throng: warning: the %s %s may be read by %s (mode %04o): %s; chmod 600 %s\n",
		what, file, who, fi.Mode().Perm(), why, file)
}

func agentCommand(prep *runner.Preparer, stderr io.Writer) *cobra.Command {
	var listen, tokenFile, dir, certFile, keyFile string
	var insecure bool
	cmd := &cobra.Command{
		Use:   "agent --listen ADDR --token-file FILE",
		Short: "Serve as a load generator for a controller (throng run --agents)",
		Long: `Serve as a load generator: a controller (throng run SCENARIO --agents ...) sends
the plan and this agent runs its segment, streaming every interval back. Only a
controller that proves the shared token is served; anyone else is refused and
logged. One controller at a time, for as long as it keeps its session (a
capacity search runs all its steps in one). A started run stops by itself when
the controller goes silent. The agent also keeps its own journal and result under --dir.

The connection is TLS 1.3. The certificate is --tls-cert/--tls-key, or one
generated at the first start and kept in --dir (agent-cert.pem, agent-key.pem),
so its fingerprint, printed at start, stays the same; a controller may pin it
(throng run --agent-fingerprint). --insecure serves plaintext instead (the
controller then needs --agents-insecure): frames are still authenticated by the
token, but anyone on the path can read them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			token, err := loadToken(tokenFile, stderr)
			if err != nil {
				return badInput(err)
			}
			srv := &agent.Server{Token: token, Runner: &agent.SegmentRunner{Prep: prep, Dir: dir, Log: stderr}, Log: stderr}
			var tlsLine string
			switch {
			case insecure && (certFile != "" || keyFile != ""):
				return badInput(errors.New("--insecure serves plaintext: do not give --tls-cert or --tls-key with it"))
			case insecure:
				tlsLine = "no TLS (--insecure): frames are authenticated by the token, but anyone on the path can read them; controllers need --agents-insecure"
			case (certFile == "") != (keyFile == ""):
				return badInput(errors.New("give --tls-cert and --tls-key together (or neither: a certificate is generated and kept in --dir)"))
			default:
				cert, where, err := agentCertificate(certFile, keyFile, dir, stderr)
				if err != nil {
					return badInput(err)
				}
				srv.TLS = agent.ServerTLS(cert)
				fp := agent.Fingerprint(cert.Certificate[0])
				tlsLine = fmt.Sprintf("TLS certificate %s (%s); a controller pins it with --agent-fingerprint %s", fp, where, fp)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return failure(fmt.Errorf("agent: %w", err))
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(stderr, "throng agent listening on %s (pid %d); results kept under %s\n", ln.Addr(), os.Getpid(), dir)
			fmt.Fprintf(stderr, "throng agent: %s\n", tlsLine)
			return srv.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7070", "address to listen on")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the shared token (or set "+tokenEnv+")")
	cmd.Flags().StringVar(&dir, "dir", filepath.Join(os.TempDir(), "throng-agent"), "where the agent keeps its journals, results and generated TLS certificate")
	cmd.Flags().StringVar(&certFile, "tls-cert", "", "the agent's TLS certificate (PEM; with --tls-key); default: generated and kept in --dir")
	cmd.Flags().StringVar(&keyFile, "tls-key", "", "the private key of --tls-cert (PEM)")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "serve plaintext, without TLS (controllers need --agents-insecure)")
	return cmd
}

// agentCertificate is the agent's certificate: from files, or generated
// in dir at the first start and reused after. where says which, for the
// start line.
func agentCertificate(certFile, keyFile, dir string, warn io.Writer) (tls.Certificate, string, error) {
	if certFile != "" {
		cert, err := agent.LoadCertificate(certFile, keyFile)
		if err != nil {
			return cert, "", err
		}
		warnReadable(warn, keyFile, "TLS key", "whoever can read it can pose as this agent to a controller that pinned it")
		return cert, "from " + certFile, nil
	}
	cert, created, err := agent.LoadOrCreateCertificate(dir)
	if err != nil {
		return cert, "", fmt.Errorf("the agent's TLS certificate: %w", err)
	}
	keyFile = filepath.Join(dir, agent.GeneratedKey)
	warnReadable(warn, keyFile, "TLS key", "whoever can read it can pose as this agent to a controller that pinned it")
	if created {
		return cert, "generated now, kept in " + filepath.Join(dir, agent.GeneratedCert), nil
	}
	return cert, "kept in " + filepath.Join(dir, agent.GeneratedCert), nil
}

// agentPins gathers the fingerprints a controller pins: --agent-fingerprint
// values and the --agent-fingerprints file's.
func agentPins(values []string, file string) ([]string, error) {
	var pins []string
	for _, v := range values {
		fp, err := agent.ParseFingerprint(v)
		if err != nil {
			return nil, fmt.Errorf("--agent-fingerprint: %v", err)
		}
		pins = append(pins, fp)
	}
	if file != "" {
		b, err := secret.ReadFile(file, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("--agent-fingerprints %s: %v", file, err)
		}
		ps, err := agent.ParsePins(b)
		if err != nil {
			return nil, fmt.Errorf("--agent-fingerprints %s: %v", file, err)
		}
		pins = append(pins, ps...)
	}
	return pins, nil
}

// agentFlags are the flags of a command that runs its load over agents
// (throng run, throng capacity): which agents, and how to reach and trust
// them.
type agentFlags struct {
	agents     []string
	agentsWait time.Duration
	tokenFile  string
	// Plaintext, or the TLS fingerprints pinned.
	agentsInsecure bool
	agentPins      []string
	agentPinsFile  string
}

// register adds the flags to fl; use is --agents' help.
func (f *agentFlags) register(fl *pflag.FlagSet, use string) {
	fl.StringSliceVar(&f.agents, "agents", nil, use)
	fl.DurationVar(&f.agentsWait, "agents-wait", 0, "with --agents: keep trying to reach agents that are not up yet for this long")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --agents: the file holding the shared token (or set THRONG_TOKEN)")
	fl.StringArrayVar(&f.agentPins, "agent-fingerprint", nil, "with --agents: accept only agents whose TLS certificate has this fingerprint (sha256:HEX, printed by throng agent; repeatable)")
	fl.StringVar(&f.agentPinsFile, "agent-fingerprints", "", "with --agents: a file of pinned fingerprints (one per line) or PEM certificates")
	fl.BoolVar(&f.agentsInsecure, "agents-insecure", false, "with --agents: talk to agents in plaintext (they run with --insecure)")
}

// check checks the form of the agents' addresses (nothing is dialled)
// and --agents-wait; the error has exit 2.
func (f *agentFlags) check() error {
	for _, a := range f.agents {
		if err := checkHostPort(a, false); err != nil {
			return badInput(fmt.Errorf("--agents %s: %w", a, err))
		}
	}
	if f.agentsWait < 0 {
		return badInput(fmt.Errorf("--agents-wait %s: must not be negative", f.agentsWait))
	}
	return nil
}

// controller is a Controller of the agents the flags name, with their
// weights (--weights, one per agent or none), the token and the pins read;
// its Plan and callbacks are the caller's. Every error is bad input (exit
// 2), the target included: a distributed run needs a real one every agent
// reaches (s is the scenario as loaded, its settings applied).
func (f *agentFlags) controller(s *scenario.Scenario, weights string, stderr io.Writer) (*agent.Controller, error) {
	if s.Target == "embedded" {
		return nil, badInput(errors.New("a distributed run needs a real target that every agent reaches: give --target URL (throng serve web runs the reference server on its own)"))
	}
	ws, err := plan.ParseWeights(weights)
	if err != nil {
		return nil, badInput(fmt.Errorf("--weights: %w", err))
	}
	if len(ws) > 0 && len(ws) != len(f.agents) {
		return nil, badInput(fmt.Errorf("--weights has %d values for %d agents", len(ws), len(f.agents)))
	}
	token, err := loadToken(f.tokenFile, stderr)
	if err != nil {
		return nil, badInput(err)
	}
	pins, err := agentPins(f.agentPins, f.agentPinsFile)
	if err != nil {
		return nil, badInput(err)
	}
	if f.agentsInsecure && len(pins) > 0 {
		return nil, badInput(errors.New("--agents-insecure talks plaintext: there is no certificate to pin (drop --agent-fingerprint)"))
	}
	return &agent.Controller{Agents: f.agents, Weights: ws, Token: token, Log: stderr, DialWait: f.agentsWait,
		Insecure: f.agentsInsecure, Pins: pins}, nil
}

// runDistributed is `throng run SCENARIO --agents ...`: this process is the
// controller; the agents run the load.
func runDistributed(prep *runner.Preparer, src runner.Source, settings []runner.Setting, f *runFlags, stdout, stderr io.Writer) error {
	l, err := prep.Load(runner.Request{Source: src, Settings: settings})
	if err != nil {
		return exitOf(err)
	}
	s := l.Scenario
	if f.segment != "1/1" || f.startAt != "" {
		return badInput(errors.New("--agents splits the plan itself: do not give --segment or --start-at"))
	}
	c, err := f.agentFlags.controller(s, f.weights, stderr)
	if err != nil {
		return err
	}
	// Check the whole scenario here first, so mistakes are reported once.
	job, err := prep.PrepareLoaded(context.Background(), l)
	if err != nil {
		return exitOf(err)
	}
	job.Close()
	o := resolveOut(f.out, s.Name)
	out := o.path
	jpath := result.JournalPath(out)
	j, err := result.CreateJournal(jpath)
	if err != nil {
		return failure(fmt.Errorf("%s: %w", jpath, err))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sig, stopSignals := stopOnSignal(cancel, stderr)
	defer stopSignals()
	lv := newLive(stderr, job.Plan, s.Runs, f.quiet)
	hm := job.Meta()
	lv.header(&hm, out)
	c.Plan = planRequest(s, settings, runner.NewRunID())
	c.OnMeta = func(m *result.Meta) { j.Meta(m) }
	c.OnRepetitionStart = func(rep int, at time.Time) { j.Repetition(rep, at) }
	c.OnInterval = func(rep int, iv *result.Interval) {
		j.Interval(rep, iv)
		lv.interval(rep, iv)
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
	job.Finish(run)
	rec := &runner.Record{Out: out, Journal: jpath}
	rec.Result, rec.ResultErr = result.Save(out, run, func() result.Source { return result.MemorySource(run) })
	rec.JournalState = j.State()
	rec.JournalErr = j.Close()
	return o.emit(stdout, finishRun(run, rec, nil, sig(), job.Thresholds, f.junit, o.summary(stdout, stderr)))
}

// planRequest is what the controller asks every agent to run: the
// scenario as written and the settings by key path (their flags stay
// here); the controller sets each agent's segment.
func planRequest(s *scenario.Scenario, settings []runner.Setting, runID string) agent.PlanRequest {
	return agent.PlanRequest{File: s.File, Source: string(s.Source), Settings: settings, Label: s.Label, RunID: runID}
}
