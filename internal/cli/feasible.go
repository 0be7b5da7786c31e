package cli

import (
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/textfmt"
)

// Work that cannot be done is refused before it starts, with exit code 4
// (ExitFailure) and a message giving the figure and the limit, rather than
// found out by the kernel: a plan beyond the engine's schedule (a rate of
// 1e18/s), or needing more memory than this process may take.

// readMemory is the memory this process may still take (a variable for
// tests).
var readMemory = func() (sampler.Memory, bool) { return sampler.ReadMemory("/") }

// checkSchedule refuses, before the plan is compiled, a schedule beyond the
// engine's limits or a plan whose users alone would not fit in memory.
func checkSchedule(s *scenario.Scenario, seg plan.Segment) error {
	n := plan.Estimate(s, seg)
	if err := n.CheckSchedule(s); err != nil {
		return failure(err)
	}
	return checkMemory(s, n.Users, float64(n.Users)*float64(plan.UserBytes), "the plan")
}

// checkEngine refuses a compiled plan whose users, as the chosen executor
// holds them, would not fit in memory.
func checkEngine(s *scenario.Scenario, p *plan.Plan, kind string) error {
	users := int64(len(p.Users))
	need := float64(users)*float64(plan.UserBytes) + float64(engine.UserBytes(kind, p))
	return checkMemory(s, users, need, "the plan and the "+kind+" engine")
}

// checkMemory refuses need bytes when they exceed the memory available.
func checkMemory(s *scenario.Scenario, users int64, need float64, what string) error {
	mem, ok := readMemory()
	if !ok || need <= float64(mem.Available) {
		return nil
	}
	return failure(s.Errorf("users", "%s users need at least %s of memory for %s alone (%s per user, before the protocol's sessions); %s are available (%s): nothing was run",
		textfmt.Num(float64(users)), textfmt.Bytes(need), what, textfmt.Bytes(need/float64(max(users, 1))), textfmt.Bytes(float64(mem.Available)), mem.Source))
}
