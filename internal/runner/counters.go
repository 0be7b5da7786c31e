package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// counterSources builds the counter sources a scenario asks for: the local
// machine (unless counters.system is false), each server process, each
// node_exporter page, the driver's own (driver.CounterSources), and always
// the generator itself.
func counterSources(s *scenario.Scenario, drv driver.Config) (*sampler.Sampler, error) {
	var srcs []sampler.Source
	if s.Counters.System {
		srcs = append(srcs, sampler.NewSystem("/"))
	}
	for i, p := range s.Counters.Processes {
		src, err := sampler.NewProcess(processSelector(p))
		if err != nil {
			return nil, s.Errorf(fmt.Sprintf("counters.processes[%d]", i), "%v", err)
		}
		srcs = append(srcs, src)
	}
	for _, u := range s.Counters.NodeExporter {
		srcs = append(srcs, sampler.NewNode(u))
	}
	if cs, ok := drv.(driver.CounterSources); ok {
		srcs = append(srcs, cs.CounterSources()...)
	}
	srcs = append(srcs, sampler.NewGenerator())
	timeout := s.Counters.Timeout.D()
	if timeout <= 0 {
		timeout = min(s.Interval.D()/2, 2*time.Second)
	}
	return sampler.New(timeout, srcs...), nil
}

// processSelector reads "1234", "pidfile:PATH" or a process name.
func processSelector(p string) sampler.ProcessSelector {
	p = strings.TrimSpace(p)
	if path, ok := strings.CutPrefix(p, "pidfile:"); ok {
		return sampler.ProcessSelector{PIDFile: path}
	}
	if pid, err := strconv.Atoi(p); err == nil && pid > 0 {
		return sampler.ProcessSelector{PID: pid}
	}
	return sampler.ProcessSelector{Name: p}
}
