package capacity

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Limit is the resource that saturated first as the load grew.
type Limit struct {
	// Resource is "server CPU", "disk", "memory", "network",
	// "connections", "generator", or "none measured".
	Resource string
	// Share is its use where it saturated, 0..1 (NaN for counts).
	Share float64
	// Load and Step are where it was first seen saturated (-1: nowhere).
	Load   float64
	Step   int
	Unit   string
	Detail string
}

// String says it in words: "server CPU (94 % at 6400 users)", "memory
// (paging: 250 major page faults/s at 200 users)", "none measured (...)".
func (l Limit) String() string {
	switch {
	case l.Resource == "":
		return ""
	case l.Step < 0:
		return l.Resource + " (" + l.Detail + ")"
	case l.Detail != "" || math.IsNaN(l.Share):
		return fmt.Sprintf("%s (%s at %s)", l.Resource, l.Detail, LoadText(l.Load, l.Unit))
	}
	return fmt.Sprintf("%s (%.0f %% at %s)", l.Resource, 100*l.Share, LoadText(l.Load, l.Unit))
}

// Marks of saturation: the share of a resource at which it counts as
// saturated. A disk busy 90 % of the time queues its work; the server's
// CPU has a mark that depends on its ceiling (CPUMarkFor); the
// generator's own guard marks it client-bound at 85 % of its CPU.
const (
	DiskMark        = 0.90
	MemoryMark      = 0.95
	NetworkMark     = 0.90
	MajorFaultsMark = 100.0 // major page faults per second: paging
	ConnErrorMark   = 0.001 // connection errors (refused, reset) per action
)

type resource struct {
	name string
	of   func(c *Counters) float64
	// past is how far the resource is past its mark (1: at it).
	past func(c *Counters) float64
	// detail says more than its share, or "".
	detail func(c *Counters) string
}

// share is a resource read as its share v over a fixed mark.
func share(name string, v func(c *Counters) float64, mark float64) resource {
	return resource{name, v, func(c *Counters) float64 { return v(c) / mark }, func(*Counters) string { return "" }}
}

// maxKnown is the larger of a and b, NaN (not measured) only when both
// are.
func maxKnown(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return math.Max(a, b)
}

var resources = []resource{
	// The server's CPU: its share of its ceiling over the ceiling's mark,
	// or its quota's throttling over its own, whichever is further past.
	{"server CPU", func(c *Counters) float64 { return c.ServerCPU }, func(c *Counters) float64 {
		return maxKnown(c.ServerCPU/CPUMarkFor(c.ServerCeiling), c.ServerThrottled/ThrottledMark)
	}, serverCPUText},
	share("disk", func(c *Counters) float64 { return c.DiskBusy }, DiskMark),
	share("memory", func(c *Counters) float64 { return c.Memory }, MemoryMark),
	share("network", func(c *Counters) float64 { return c.Network }, NetworkMark),
}

// firstLimit walks the steps by load, up to the lowest load that failed
// (hi), and names the first resource seen at or past its mark: the
// generator when a step was generator-bound, else the resource furthest
// past its mark in the first step where any was. None: the limit is not
// a measured resource.
func firstLimit(a *analysis, hi *point) Limit {
	unit := a.cfg.Dimension.Unit
	var order []int
	for i := range a.steps {
		s := &a.steps[i]
		if s.Kind == WarmUp {
			continue
		}
		// A generator-bound load counts once repeated (a passing wait for
		// a CPU does not); other invalid steps tell nothing.
		if p := a.at(s.Load); !s.Valid() && (p == nil || p.state != stCeiling) {
			continue
		}
		order = append(order, i)
	}
	if len(order) == 0 {
		return Limit{}
	}
	slices.SortStableFunc(order, func(i, j int) int {
		switch {
		case a.steps[i].Load < a.steps[j].Load:
			return -1
		case a.steps[i].Load > a.steps[j].Load:
			return 1
		}
		return 0
	})
	maxCPU, upTo := math.NaN(), 0.0
	for _, i := range order {
		s := &a.steps[i]
		if hi != nil && s.Load > hi.load {
			break
		}
		upTo = s.Load
		if s.has(GeneratorBound) {
			return Limit{Resource: "generator", Share: s.Counters.GeneratorCPU, Load: s.Load, Step: i, Unit: unit, Detail: generatorWhy(s)}
		}
		if c := s.Counters.ServerCPU; !math.IsNaN(c) && !(c <= maxCPU) {
			maxCPU = c
		}
		best, bestRatio := -1, 1.0
		for k, r := range resources {
			// NaN (not measured) is never past its mark.
			if v := r.past(&s.Counters); v >= bestRatio {
				best, bestRatio = k, v
			}
		}
		if best >= 0 {
			r := resources[best]
			return Limit{Resource: r.name, Share: r.of(&s.Counters), Load: s.Load, Step: i, Unit: unit, Detail: r.detail(&s.Counters)}
		}
		if f := s.Counters.MajorFaultsPerS; f >= MajorFaultsMark {
			return Limit{Resource: "memory", Share: math.NaN(), Load: s.Load, Step: i, Unit: unit,
				Detail: fmt.Sprintf("paging: %.0f major page faults/s", f)}
		}
		if conn := s.ErrorsByClass["dial"] + s.ErrorsByClass["io"]; s.Count > 0 && float64(conn)/float64(s.Count) >= ConnErrorMark {
			return Limit{Resource: "connections", Share: math.NaN(), Load: s.Load, Step: i, Unit: unit,
				Detail: fmt.Sprintf("%d connections refused or broken", conn)}
		}
	}
	d := fmt.Sprintf("no measured resource reached its mark up to %s", LoadText(upTo, unit))
	if !math.IsNaN(maxCPU) {
		d += fmt.Sprintf(", server CPU at most %.0f %%", 100*maxCPU)
	}
	return Limit{Resource: "none measured", Step: -1, Load: math.NaN(), Share: math.NaN(), Unit: unit,
		Detail: d + ": the limit is elsewhere (a pool of workers, a lock, a queue) or in a resource not measured"}
}

// Costs are what one unit of load and one action cost the server, at one
// step.
type Costs struct {
	Load float64
	Unit string
	// CPUMsPerAction is server CPU-milliseconds per successful action.
	CPUMsPerAction float64
	// CoresPerUnit is server cores per unit of load (per user, per
	// request/s); UnitsPerCore its inverse (users per core: the Exchange study's
	// rule, derived).
	CoresPerUnit, UnitsPerCore float64
}

// costsAt derives the costs from a step's counters; nil when the server's
// CPU was not measured.
func costsAt(s *Step) *Costs {
	cores := s.Counters.ServerCores
	if math.IsNaN(cores) || cores <= 0 || s.Load <= 0 {
		return nil
	}
	c := &Costs{Load: s.Load, CoresPerUnit: cores / s.Load, UnitsPerCore: s.Load / cores, CPUMsPerAction: math.NaN()}
	if s.Throughput > 0 {
		c.CPUMsPerAction = 1000 * cores / s.Throughput
	}
	return c
}

// generatorWhy is why step s found the generator the bottleneck, in the
// run's own words (its validity check), cut before the general remark.
func generatorWhy(s *Step) string {
	for _, iv := range s.Invalid {
		if iv.Kind == GeneratorBound {
			why, _, _ := strings.Cut(iv.Why, ": there the figures")
			return why
		}
	}
	return "the load generator was the bottleneck"
}
