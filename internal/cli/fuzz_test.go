package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/presets"
)

// The fuzz tests drive what `throng run FILE [flags]` does before any load
// starts: read, decode, overrides, validate, refuse impossible work,
// decode the driver's block, compile the actions and the plan, choose the
// engine. Instead of starting an embedded server, the Preparer's families
// give a target of the family's kind where nothing listens (nothing connects
// before the preflight, which is not run). What must hold for any input:
// no panic, well under a second and 100 MB, and either a runnable plan or
// errors (exit 2 or 4) that each say where: file:line:col when the problem
// is on a line, else the key path or the flag, or the whole file.

// fuzzBudget bounds the time and the bytes allocated to read and prepare
// one input; the classes in classes_test.go hold tighter bounds.
const (
	fuzzTime  = time.Second // CPU time (cpuTime); typically a few ms
	fuzzBytes = 100 << 20
)

// placeholderPreparer is throng's Preparer whose families' embedded
// servers are targets of the family's kind where nothing listens: nothing
// is started, and nothing connects before the preflight, which is not run.
func placeholderPreparer(dir string) *runner.Preparer {
	prep := newPreparer()
	for i := range prep.Families {
		fam := &prep.Families[i]
		url := map[string]string{"web": "http://127.0.0.1:9", "files": "file://" + dir, "mail": "imap://127.0.0.1:9",
			"pubsub": "nats://127.0.0.1:9", "nats": "nats://127.0.0.1:9", "mqtt": "mqtt://127.0.0.1:9"}[fam.Name]
		name := fam.Name
		fam.Embedded = func(string) (driver.Target, error) {
			if url == "" {
				return nil, errors.New("no placeholder target for family " + name)
			}
			return driver.URLTarget(url), nil
		}
	}
	return prep
}

// smallMemory makes plans of more than a few million users "too large for
// this machine", so the fuzzers never compile a plan of gigabytes.
var smallMemory = fixedMemory(64<<20, "the fuzz test's limit")

// tryRun reads and prepares the scenario at path with the settings, as
// throng run does with its flags, and checks the outcome: a plan, or
// errors that say where.
func tryRun(t *testing.T, path string, settings []runner.Setting, segment, weights, startAt string) {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0, t0 := cpuTime(t), time.Now()
	var job *runner.Job
	src, err := readScenario(path)
	var seg plan.Segment
	if err == nil {
		seg, err = parseSegment(segment, weights)
		if err != nil {
			err = badInput(err)
		}
	}
	if err == nil && startAt != "" {
		if _, perr := time.Parse(time.RFC3339Nano, startAt); perr != nil {
			err = badInput(fmt.Errorf("--start-at %q: want a time like 2026-11-21T15:04:05Z", startAt))
		}
	}
	if err == nil {
		prep := placeholderPreparer(t.TempDir())
		prep.Memory = smallMemory
		job, err = prep.Prepare(context.Background(), runner.Request{Source: src, Settings: settings, Segment: seg})
		err = exitOfOrNil(err)
	}
	took, wall := cpuTime(t)-c0, time.Since(t0)
	runtime.ReadMemStats(&m1)
	if wall > wallLimit {
		t.Errorf("took %v of wall time", wall)
	}
	if job != nil {
		job.Close()
		if job.Plan == nil || job.Kind == "" {
			t.Fatalf("a prepared run without a plan or an engine")
		}
	}
	if took > fuzzTime {
		t.Errorf("took %v of CPU (at most %v)", took, fuzzTime)
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > fuzzBytes {
		t.Errorf("allocated %d MB (at most %d)", a>>20, fuzzBytes>>20)
	}
	if err != nil {
		checkRunError(t, err, path)
	}
}

// exitOfOrNil is exitOf, and nil for nil.
func exitOfOrNil(err error) error {
	if err == nil {
		return nil
	}
	return exitOf(err)
}

// checkRunError asserts that err is a refusal with exit code 2 or 4 whose
// every message says where the problem is.
func checkRunError(t *testing.T, err error, path string) {
	t.Helper()
	var ee *exitError
	if !errors.As(err, &ee) || (ee.code != ExitBadInput && ee.code != ExitFailure) {
		t.Fatalf("error without exit code 2 or 4: %v", err)
	}
	if strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "panic") {
		t.Fatalf("internal error: %v", err)
	}
	var es scenario.Errors
	leaves := []error{ee.err}
	if errors.As(ee.err, &es) {
		leaves = es
	}
	for _, e := range leaves {
		var se *scenario.Error
		if !errors.As(e, &se) {
			// Not about the file's text: a flag, or the file itself.
			if !strings.HasPrefix(e.Error(), "--") && !strings.HasPrefix(e.Error(), "scenario "+path) {
				t.Errorf("a message that says neither where nor which flag: %v", e)
			}
			continue
		}
		switch {
		case se.Msg == "":
			t.Errorf("empty message: %#v", se)
		case strings.HasPrefix(se.File, "flag "):
		case se.File != path && !strings.HasPrefix(se.File, "presets/"):
			t.Errorf("message about file %q, not %q: %v", se.File, path, se)
		case se.Pos.Line == 0 && se.Path == "" && !strings.HasPrefix(se.Msg, "the file "):
			t.Errorf("no line, no key and not about the whole file: %v", se)
		}
		if ee.code == ExitFailure && !errors.Is(e, plan.ErrImpossible) && !strings.Contains(se.Msg, "of memory") {
			t.Errorf("exit 4 for a problem of the file: %v", se)
		}
	}
}

// scenarioSeeds are the fuzz corpus's seeds: every preset, each cut at
// many offsets, and each class of bad input (classes_test.go).
func scenarioSeeds() [][]byte {
	var out [][]byte
	for _, name := range presets.Names() {
		_, src, _ := presets.Source(name)
		out = append(out, src)
		for cut := 7; cut < len(src); cut += 37 {
			out = append(out, src[:cut])
		}
	}
	for _, c := range fileClasses {
		out = append(out, []byte(c.src))
	}
	return out
}

func FuzzRunScenario(f *testing.F) {
	for _, s := range scenarioSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.yaml")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		tryRun(t, path, nil, "1/1", "", "")
	})
}

// runFlagNames are every flag of `throng run`, taken from the command
// itself (a flag added later is fuzzed too), in the order FuzzRunFlags
// numbers them.
var runFlagNames = func() []string {
	cmd, _ := runCommandFlags(newPreparer(), io.Discard, io.Discard)
	var out []string
	cmd.Flags().VisitAll(func(fl *pflag.Flag) { out = append(out, "--"+fl.Name) })
	return out
}()

// FuzzRunFlags gives one run flag an arbitrary value, over a preset, and
// goes through what `throng run` does with it before any load starts: the
// flag's parsing, the scenario settings, the other flags' checks
// (checkRunFlags; the token and fingerprint files are read), then the
// scenario's preparation. Nothing is listened on or dialled.
func FuzzRunFlags(f *testing.F) {
	values := []string{"", "0", "-1", "1", "5", "1e30", "9223372036854775807", "NaN", "Inf", "1e-300", ".nan",
		"2562047h", "1/0s", "1e18/s", "5000/s", "90s", "-1s", "75KB", "1TB", "http://127.0.0.1:99999", "embedded",
		"rate=1e18/s", "=", "x=y", "subscribers=1e9", "p95 < 500ms", "p95 <", "pidfile:/dev/zero", "pidfile:",
		"http://", "2/1", "1/3", "0/0", "1,3", "1,0,3", "2026-11-21T15:04:05Z", "yesterday", "\x00", "../../x", "io_uring",
		"127.0.0.1:99999", "127.0.0.1", ":0", "[::1]:9", "a b:9", "/dev/zero", "/dev/null", "/", "true", "sha256:00",
		"127.0.0.1:9,127.0.0.1:10"}
	presetNames := presets.Names()
	for i := range runFlagNames {
		for j, v := range values {
			f.Add(uint8(i), uint8(j%len(presetNames)), v)
		}
	}
	f.Fuzz(func(t *testing.T, flag, preset uint8, value string) {
		name := runFlagNames[int(flag)%len(runFlagNames)]
		arg := presetNames[int(preset)%len(presetNames)]
		cmd, fl := runCommandFlags(newPreparer(), io.Discard, io.Discard)
		if err := cmd.ParseFlags([]string{name + "=" + value}); err != nil {
			if !strings.Contains(err.Error(), strings.TrimPrefix(name, "--")) {
				t.Errorf("a flag error that does not name the flag: %v", err)
			}
			return
		}
		settings, err := runSettings(cmd, fl)
		if err == nil {
			err = checkRunFlags(fl, false)
		}
		if err == nil && fl.tokenFile != "" {
			if _, terr := loadToken(fl.tokenFile, io.Discard); terr != nil {
				err = badInput(terr)
			}
		}
		if err == nil && (len(fl.agentPins) > 0 || fl.agentPinsFile != "") {
			if _, perr := agentPins(fl.agentPins, fl.agentPinsFile); perr != nil {
				err = badInput(perr)
			}
		}
		if err != nil {
			checkRunError(t, err, arg)
			return
		}
		tryRun(t, arg, settings, fl.segment, fl.weights, fl.startAt)
	})
}
