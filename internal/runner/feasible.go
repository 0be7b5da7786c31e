package runner

import (
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/textfmt"
)

// Work that cannot be done is refused before it starts, as an *Error of
// kind Unable with a message giving the figure and the limit, rather than
// found out by the kernel: a plan beyond the engine's schedule (a rate of
// 1e18/s), or needing more memory than this process may take.

// checkSchedule refuses, before the plan is compiled, a schedule beyond the
// engine's limits or a plan whose users alone would not fit in memory.
func (p *Preparer) checkSchedule(s *scenario.Scenario, seg plan.Segment) error {
	n := plan.Estimate(s, seg)
	if err := n.CheckSchedule(s); err != nil {
		return unable(err)
	}
	return p.checkMemory(s, n.Users, float64(n.Users)*float64(plan.UserBytes), "the plan")
}

// checkEngine refuses a compiled plan whose users, as the chosen executor
// holds them, would not fit in memory.
func (p *Preparer) checkEngine(s *scenario.Scenario, pl *plan.Plan, kind string) error {
	users := int64(len(pl.Users))
	need := float64(users)*float64(plan.UserBytes) + float64(engine.UserBytes(kind, pl))
	return p.checkMemory(s, users, need, "the plan and the "+kind+" engine")
}

// checkMemory refuses need bytes when they exceed the memory available.
func (p *Preparer) checkMemory(s *scenario.Scenario, users int64, need float64, what string) error {
	read := p.Memory
	if read == nil {
		read = func() (sampler.Memory, bool) { return sampler.ReadMemory("/") }
	}
	mem, ok := read()
	if !ok || need <= float64(mem.Available) {
		return nil
	}
	return unable(s.Errorf("users", "%s users need at least %s of memory for %s alone (%s per user, before the protocol's sessions); %s are available (%s): nothing was run",
		textfmt.Num(float64(users)), textfmt.Bytes(need), what, textfmt.Bytes(need/float64(max(users, 1))), textfmt.Bytes(float64(mem.Available)), mem.Source))
}
