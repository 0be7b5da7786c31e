package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// throngWith runs the command in-process with prep as its Preparer (other
// families, a fixed memory) and returns its exit code and output.
func throngWith(t *testing.T, prep *runner.Preparer, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = mainWith(args, &out, &errb, prep)
	return code, out.String(), errb.String()
}

// loadScenario finds a scenario by file path or preset name and decodes
// it, as throng run does.
func loadScenario(arg string) (*scenario.Scenario, error) {
	return loadScenarioWith(newPreparer(), arg, nil)
}

// loadScenarioVars is loadScenario with values for the scenario's variables.
func loadScenarioVars(arg string, vars map[string]string) (*scenario.Scenario, error) {
	return loadScenarioWith(newPreparer(), arg, vars)
}

// setting is a setting given by the flag of its key's name.
func setting(key, value string) runner.Setting {
	return runner.Setting{Key: key, Value: value, From: "flag --" + key}
}

// prepareArg prepares a scenario (file or preset) with settings, as
// throng run does, through prep (nil: throng's own); the job is closed at
// the test's end.
func prepareArg(t testing.TB, prep *runner.Preparer, arg string, settings ...runner.Setting) (*runner.Job, error) {
	t.Helper()
	if prep == nil {
		prep = newPreparer()
	}
	src, err := readScenario(arg)
	if err != nil {
		return nil, err
	}
	job, err := prep.Prepare(context.Background(), runner.Request{Source: src, Settings: settings})
	if err != nil {
		return nil, exitOf(err)
	}
	t.Cleanup(func() { job.Close() })
	return job, nil
}

// fixedMemory is a Preparer's Memory that says avail bytes are available.
func fixedMemory(avail int64, source string) func() (sampler.Memory, bool) {
	return func() (sampler.Memory, bool) {
		return sampler.Memory{Available: avail, Total: avail, Source: source}, true
	}
}
