package runner

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"github.com/throng-io/throng/internal/buildinfo"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// Meta is the job's metadata for its result: what was run (the scenario's
// text, the settings applied, the driver's settings), where, how and on
// which machine. Build it after Preflight: the settings the server
// negotiated there are the driver's to report. Overrides records the
// settings by key path, and the segment ("segment", "weights") when it is
// not the whole plan. StartedAt is now; set it again when the load starts.
func (j *Job) Meta() result.Meta {
	s, p := j.Scenario, j.Plan
	sum := sha256.Sum256(s.Source)
	over := make(map[string]string, len(j.given)+2)
	for k, v := range j.given {
		over[k] = v
	}
	if j.Segment.N > 1 {
		over["segment"] = strconv.Itoa(j.Segment.K) + "/" + strconv.Itoa(j.Segment.N)
	}
	if ws := j.Segment.Weights(); ws != nil {
		w := make([]string, len(ws))
		for i, x := range ws {
			w[i] = strconv.Itoa(x)
		}
		over["weights"] = strings.Join(w, ",")
	}
	m := result.Meta{
		Scenario: s.Name, Description: s.Description, Label: s.Label, File: s.File,
		SourceSHA256: hex.EncodeToString(sum[:]), Source: string(s.Source),
		Overrides: over, Driver: s.Driver, Target: j.Target.String(), Model: s.Model,
		Users: s.Users, Segment: j.Segment.String(), SegmentUsers: len(p.Users), Seed: s.Seed, Speedup: s.Speedup,
		IntervalS: s.Interval.D().Seconds(), Iterations: s.Closed.Iterations, Total: s.Closed.Total, RatePerS: p.Rate,
		Engine: j.Kind, Threads: engine.LoopThreads(j.Kind, j.Threads, len(p.Users)),
		Runs: s.Runs, Trim: s.Trim, MaxDurationS: p.MaxDuration.Seconds(),
		Host: HostInfo(), Versions: versions(j.version),
		Command: os.Args, StartedAt: time.Now(),
	}
	if s.Model != scenario.Closed {
		m.Iterations, m.Total = 0, 0
	}
	m.RunID = RunID(m, j.Segment)
	if d, ok := j.Driver.(driver.Describer); ok {
		m.Settings = d.Describe()
	}
	// The users' actions, then the rows that are not (left out of the
	// totals): the journeys' own rows, the driver's events.
	m.Actions = p.RowNames()
	m.Events = append([]string(nil), m.Actions[len(p.Actions):]...)
	if ev, ok := j.Driver.(driver.Events); ok {
		m.Actions = append(m.Actions, ev.EventActions()...)
		m.Events = append(m.Events, ev.EventActions()...)
	}
	if s.Grouped() {
		m.Model = "groups"
		for _, g := range p.Groups {
			gm := result.GroupMeta{Name: g.Name, Users: g.Users, Model: g.Model}
			for _, a := range p.Actions[g.First : g.First+g.N] {
				gm.Actions = append(gm.Actions, a.Name)
			}
			m.Groups = append(m.Groups, gm)
		}
	}
	for _, ph := range p.Phases {
		end := ph.End.Seconds()
		if ph.End == plan.Open {
			end = -1
		}
		m.Phases = append(m.Phases, result.PhaseMeta{Name: ph.Name, StartS: ph.Start.Seconds(), EndS: end})
	}
	return m
}

// HostInfo describes this machine for a result's metadata.
func HostInfo() result.Host {
	h := result.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: sampler.Cores(), GoMaxProcs: runtime.GOMAXPROCS(0)}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if m, ok := sampler.ReadMemory("/"); ok {
		h.MemoryBytes = uint64(m.Total)
	}
	return h
}

// versions records the program's build: the version the Preparer was
// given, and the commit and date of the running binary.
func versions(v string) result.Versions {
	in := buildinfo.Read()
	return result.Versions{Throng: v, Commit: in.ShortCommit(), Date: in.Date, Go: runtime.Version()}
}
