package runner

import (
	"context"
	"errors"
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
// the generator itself. It refuses a server's counters for an embedded
// target (the server runs inside throng: its cost is in the generator's
// figures, and another process or machine is not it), and a server process
// that is nothing but this throng.
func counterSources(s *scenario.Scenario, drv driver.Config) (*sampler.Sampler, error) {
	var srcs []sampler.Source
	if s.Counters.System {
		srcs = append(srcs, sampler.NewSystem("/"))
	}
	if s.Target == "embedded" {
		for _, c := range []struct {
			path, flag string
			n          int
		}{{"counters.processes", "--server-process", len(s.Counters.Processes)}, {"counters.node_exporter", "--node-exporter", len(s.Counters.NodeExporter)}} {
			if c.n > 0 {
				return nil, s.Errorf(c.path, "the target is embedded: the server runs inside this throng, so its cost is in the client figures, and %s measures another server (give --target to measure a server of your own)", c.flag)
			}
		}
	}
	for i, p := range s.Counters.Processes {
		path := fmt.Sprintf("counters.processes[%d]", i)
		src, err := sampler.NewProcess(processSelector(p))
		if err != nil {
			return nil, s.Errorf(path, "%v", err)
		}
		// A server that is not running yet is a gap, not an error; one
		// that is this throng would measure the generator as the server.
		if err := src.Sample(context.Background(), func(sampler.Point) {}); errors.Is(err, sampler.ErrGenerator) {
			return nil, s.Errorf(path, "%v", err)
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
