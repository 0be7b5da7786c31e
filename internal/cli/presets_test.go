package cli

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/scenario"
	mailtarget "github.com/throng-io/throng/internal/targets/mail"
	"github.com/throng-io/throng/presets"
)

// smallScale runs each preset in a few seconds, through its flags and
// variables only (the README's promise: every preset runs with no setup,
// and scales by its variables).
var smallScale = map[string][]string{
	"web-static":     {"--users", "2", "--iterations", "3000"},
	"web-open":       {"--rate", "300/s", "--users", "8", "--set", "ramp=1s", "--set", "steps=2", "--set", "ramp_down=1s", "--duration", "2s"},
	"web-shop":       {"--users", "4", "--iterations", "3", "--set", "think=10ms"},
	"smb-smallfiles": {"--set", "files=300", "--size", "4KiB", "--runs", "2", "--trim", "0"},
	"ipush-1":        {"--subscribers", "20", "--set", "ramp=1s", "--set", "start=1500ms", "--duration", "2s"},
	"ipush-2":        {"--subscribers", "20", "--set", "ramp=1s", "--set", "start=1500ms", "--duration", "2s"},
	"loadsim-online": {"--users", "12", "--speedup", "600", "--set", "ramp=1s", "--duration", "3s", "--interval", "1s"},
	"loadsim-cached": {"--users", "12", "--speedup", "600", "--set", "ramp=1s", "--duration", "3s", "--interval", "1s"},
	"domino-r6": {"--users", "6", "--set", "group=3", "--set", "every=100ms", "--set", "pause=1s", "--set", "mail_file=40MB",
		"--speedup", "240", "--duration", "3s", "--interval", "1s"},
}

// Every preset runs against its family's embedded server with nothing set
// up, scaled down by its flags and variables, and completes: exit 0, every
// action done without an error from the target (calendar actions without
// CalDAV are counted as skipped, which is not an error), nothing lost.
func TestPresetsRunWithNoSetup(t *testing.T) {
	for _, name := range presets.Names() {
		args, ok := smallScale[name]
		if !ok {
			t.Errorf("preset %s has no small scale in this test: add one", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name+".json")
			all := append([]string{"run", name, "-q", "-o", out}, args...)
			code, stdout, stderr := throng(t, all...)
			if code != 0 {
				t.Fatalf("throng %s: exit %d\n%s\n%s", strings.Join(all, " "), code, stdout, stderr)
			}
			run, err := result.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(run.Meta.Target, "embedded ") {
				t.Errorf("target %q, want the embedded server", run.Meta.Target)
			}
			var done uint64
			for _, rep := range run.Repetitions {
				for _, a := range result.Find(rep.Summaries, result.All).Actions {
					done += a.OK
					if a.Errors != 0 || a.ErrorsByClass["lost"] != 0 {
						t.Errorf("%s: %d errors %v %v", a.Name, a.Errors, a.ErrorsByClass, a.Messages)
					}
				}
			}
			if done == 0 {
				t.Error("no action was done")
			}
		})
	}
}

// varValues gives each preset variable a value other than its default;
// a preset that declares a variable missing here fails the test below.
var varValues = map[string]map[string]string{
	"web-open":       {"ramp": "20s", "steps": "2", "ramp_down": "5s"},
	"web-shop":       {"think": "1s", "protocol": "h2c", "insecure": "true", "ramp": "5s"},
	"smb-smallfiles": {"files": "1000", "size": "4096"},
	"ipush-1": {"subscribers": "300", "rate": "20/s", "size": "200B", "protocol": "mqtt", "qos": "1", "ramp": "3s",
		"start": "4s", "accounting": "acc.csv"},
	"loadsim-online": {"inbox": "50", "folders": "5", "folder_messages": "3", "size": "20KB", "calendar": "5",
		"contacts": "10", "lists": "10", "ramp": "10s"},
	"domino-r6": {"group": "50", "every": "2s", "pause": "2m", "mail_file": "400MB", "size": "100KB",
		"inbox_share": "25%", "folders": "5"},
}

// varContext is what a variable needs set beside it to be valid, in the
// run with it and in the one it is compared with (MQTT for a QoS).
var varContext = map[string]map[string]map[string]string{
	"ipush-1": {"qos": {"protocol": "mqtt"}},
}

func init() {
	varValues["ipush-2"] = varValues["ipush-1"]
	varValues["loadsim-cached"] = varValues["loadsim-online"]
	varContext["ipush-2"] = varContext["ipush-1"]
}

// Each preset's every variable changes what a run would do: the compiled
// plan (users, their windows, phases, rates) or the driver's decoded
// configuration and actions, compared field by field with the preset's
// defaults (fields that differ between two compilations of the defaults,
// like a random nonce, are left out). A variable declared but unused, or
// used where something overrides it, fails.
func TestPresetVarsChangeThePlan(t *testing.T) {
	t.Setenv("SMB_PASSWORD", "unused")
	for _, name := range presets.Names() {
		t.Run(name, func(t *testing.T) {
			base := presetFingerprint(t, name, nil)
			noise := map[string]bool{}
			for k, v := range presetFingerprint(t, name, nil) {
				if base[k] != v {
					noise[k] = true
				}
			}
			s, err := loadScenario(name)
			if err != nil {
				t.Fatal(err)
			}
			want := varValues[name]
			for _, v := range slices.Sorted(maps.Keys(s.Vars)) {
				alt, ok := want[v]
				if !ok {
					t.Errorf("variable %s has no other value in this test: add one", v)
					continue
				}
				if alt == s.Vars[v] {
					t.Fatalf("variable %s: the test's value is its default", v)
				}
				ctx := varContext[name][v]
				from := base
				if ctx != nil {
					from = presetFingerprint(t, name, ctx)
				}
				set := maps.Clone(ctx)
				if set == nil {
					set = map[string]string{}
				}
				set[v] = alt
				fp := presetFingerprint(t, name, set)
				if diff := changed(from, fp, noise); len(diff) == 0 {
					t.Errorf("--set %s=%s changes nothing in the plan or the driver's configuration", v, alt)
				}
			}
			for v := range want {
				if _, ok := s.Vars[v]; !ok {
					t.Errorf("the test gives %s a value, but the preset has no such variable", v)
				}
			}
		})
	}
}

// presetFingerprint compiles a preset with these variables against a
// placeholder target of its family and flattens the plan (less the
// scenario) and the driver's configuration and compiled actions into
// path -> value.
func presetFingerprint(t *testing.T, name string, vars map[string]string) map[string]string {
	t.Helper()
	s, err := loadScenarioVars(name, vars)
	if err != nil {
		t.Fatalf("%s with %v: %v", name, vars, err)
	}
	var settings []runner.Setting
	for k, v := range vars {
		settings = append(settings, runner.Setting{Key: "vars." + k, Value: v, From: "flag --set"})
	}
	// A placeholder target where nothing listens; pub/sub keeps its
	// embedded pair of brokers, whose protocol the variable picks.
	if s.Driver != "pubsub" {
		settings = append(settings, setting("target", map[string]string{"web": "http://127.0.0.1:9", "files": "smb://u@127.0.0.1:9/share/dir",
			"mail": "imap://127.0.0.1:9"}[s.Driver]))
	}
	job, err := prepareArg(t, nil, name, settings...)
	if err != nil {
		t.Fatalf("%s with %v: %v", name, vars, err)
	}
	defer job.Close()
	fp := map[string]string{}
	flatten(fp, "plan", reflect.ValueOf(job.Plan), map[uintptr]bool{}, 0)
	flatten(fp, "driver", reflect.ValueOf(job.Driver), map[uintptr]bool{}, 0)
	flatten(fp, "actions", reflect.ValueOf(job.Actions), map[uintptr]bool{}, 0)
	return fp
}

// changed lists the paths whose values differ, leaving noise out.
func changed(a, b map[string]string, noise map[string]bool) []string {
	var out []string
	for k, v := range b {
		if !noise[k] && a[k] != v {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok && !noise[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

var (
	scenarioPtr = reflect.TypeFor[*scenario.Scenario]()
	nodeType    = reflect.TypeFor[scenario.Node]()
)

// flatten writes every leaf value under v into fp, following pointers
// (once each), interfaces, structs (unexported fields too), maps (sorted)
// and slices; the scenario itself and its YAML nodes are left out (they
// hold the variables, which would make every change visible).
func flatten(fp map[string]string, path string, v reflect.Value, seen map[uintptr]bool, depth int) {
	if depth > 12 || !v.IsValid() {
		return
	}
	if v.Type() == scenarioPtr || v.Type() == nodeType {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			fp[path] = "nil"
			return
		}
		if seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		flatten(fp, path, v.Elem(), seen, depth+1)
	case reflect.Interface:
		if v.IsNil() {
			fp[path] = "nil"
			return
		}
		flatten(fp, path, v.Elem(), seen, depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			flatten(fp, path+"."+v.Type().Field(i).Name, v.Field(i), seen, depth+1)
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		fp[path+".len"] = fmt.Sprint(v.Len())
		for _, k := range keys {
			flatten(fp, fmt.Sprintf("%s[%v]", path, k), v.MapIndex(k), seen, depth+1)
		}
	case reflect.Slice, reflect.Array:
		fp[path+".len"] = fmt.Sprint(v.Len())
		for i := range min(v.Len(), 20_000) {
			flatten(fp, fmt.Sprintf("%s[%d]", path, i), v.Index(i), seen, depth+1)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
	case reflect.Bool:
		fp[path] = fmt.Sprint(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fp[path] = fmt.Sprint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		fp[path] = fmt.Sprint(v.Uint())
	case reflect.Float32, reflect.Float64:
		fp[path] = fmt.Sprint(v.Float())
	case reflect.String:
		fp[path] = v.String()
	default:
		fp[path] = v.Kind().String()
	}
}

// loadsim-online's population at the study's scale (8,000 users x 201
// messages of 75 KB on average, 120 GB) is set up on the embedded server
// without storing a message: 50 users' share of it is prepared here (a
// segment's), and the server holds none of their bytes.
func TestStudyPopulationIsNotStored(t *testing.T) {
	job, err := prepareArg(t, nil, "loadsim-online")
	if err != nil {
		t.Fatal(err)
	}
	s := job.Scenario
	c := job.Driver.(*mail.Config)
	srv, ok := c.Provisioner.(*mailtarget.Server)
	if !ok || s.Users != 8000 {
		t.Fatalf("the preset's target is not the embedded server (%T), or not 8,000 users (%d)", c.Provisioner, s.Users)
	}
	c.SetLog(func(string) {})
	users := make([]int, 50)
	for i := range users {
		users[i] = i * 160
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Prepare(ctx, driver.Population{TotalUsers: s.Users, Users: users, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Messages != 50*201 || !st.Synthetic || st.Bytes < 50*201*40_000 || st.Bytes > 50*201*120_000 {
		t.Errorf("population %+v", st)
	}
	if n, b := srv.Store().Stored(); n != 0 || b != 0 {
		t.Errorf("the embedded server stores %d messages (%d bytes) of the population", n, b)
	}
	if _, n := srv.Store().Counts(); n != 50*201 {
		t.Errorf("the embedded server holds %d messages, want %d", n, 50*201)
	}
}

// Every preset that reproduces a study names it (docs/studies.md) and
// shows the command of the study's full scale, and that command is
// valid: given a target where nothing listens, it gets as far as checking
// the target (exit 4, "nothing was run"), past every check of its flags,
// variables, plan and driver.
func TestPresetsFullScaleCommands(t *testing.T) {
	closed := map[string]string{"web": "http://127.0.0.1:9", "files": "smb://u@127.0.0.1:9/share/dir",
		"mail": "imap://127.0.0.1:9?smtp=127.0.0.1:9", "pubsub": "nats://127.0.0.1:9"}
	t.Setenv("SMB_PASSWORD", "unused")
	for _, name := range presets.Names() {
		s, err := loadScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		full := presets.FullScale(name)
		if !strings.Contains(s.Description, "study (docs/studies.md)") {
			if name != "web-open" && name != "web-shop" {
				t.Errorf("%s: the description names no study of docs/studies.md: %q", name, s.Description)
			}
			continue
		}
		args := strings.Fields(full)
		if len(args) < 3 || args[0] != "throng" || args[1] != "run" || args[2] != name {
			t.Errorf("%s: full scale %q is not a throng run %s command", name, full, name)
			continue
		}
		args = append(args[1:], "--target", closed[s.Driver], "-q", "-o", filepath.Join(t.TempDir(), name+".json"))
		code, _, stderr := throng(t, args...)
		if code != ExitFailure || !strings.Contains(stderr, "nothing was run") {
			t.Errorf("%s: %s: exit %d (want %d, stopped at the target check)\n%s", name, full, code, ExitFailure, stderr)
		}
	}
}
