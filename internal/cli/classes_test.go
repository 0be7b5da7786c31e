package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/runner"
)

// fileClasses are the kinds of bad scenario file that `throng run` must
// refuse with exit code 2 (4: work that cannot be done) and one clear
// message, in under a second of CPU and 100 MB. want is in the message; at is
// its position ("" when the problem has no line).
var fileClasses = []struct {
	name, src string
	code      int
	at, want  string
}{
	// YAML syntax errors.
	{"unclosed list", "users: [1\n", 2, ":1:8:", "']' not found (a bracket is not closed)"},
	{"unclosed mapping", "users: 1\nclosed: {iterations: 1\n", 2, ":2:9:", "flow mapping end token '}'"},
	{"bad indent", "users: 1\n  closed: 2\n", 2, ":1:8:", "check the indentation of this line and the next"},
	{"bad list indent", "actions:\n  - path: /\n - path: /x\n", 2, ":3:2:", "YAML syntax"},
	{"duplicate key", "users: 1\nusers: 2\n", 2, ":2:1:", `"users" already defined at [1:1] (a key is given once per mapping)`},
	{"duplicate key in flow", "closed: {iterations: 1, iterations: 2}\n", 2, ":1:25:", `"iterations" already defined`},
	{"unclosed quote", "users: \"abc\n", 2, ":1:8:", "double-quoted text (a quote is not closed)"},
	{"tab indent", "users: 1\n\tclosed: 2\n", 2, ":2:1:", "'\\t' that cannot start any token (indent with spaces, not tabs)"},
	{"reserved character", "users: @x\n", 2, ":1:8:", "reserved character"},
	{"truncated", "users: 10\nclosed: {iterations: 5}\nactions:\n  - {path: /, weig", 2, ":4:15:", "YAML syntax"},
	// Files without a scenario.
	{"empty", "", 2, "", "the file is empty"},
	{"blank", "\n  \n\n", 2, "", "the file is empty"},
	{"comments only", "# a scenario\n# to come\n", 2, "", "only comments"},
	{"document marker only", "---\n", 2, "", "only document markers"},
	{"two documents", "users: 1\n---\nusers: 2\n", 2, ":3:1:", "this is a second one"},
	{"not a mapping", "- users: 1\n", 2, ":1:1:", "a scenario is a mapping"},
	// Encodings.
	{"UTF-16 LE", "\xff\xfeu\x00s\x00e\x00r\x00s\x00:\x00 \x001\x00\n\x00", 2, "", "UTF-16 text: save it as UTF-8"},
	{"UTF-16 BE", "\xfe\xff\x00u\x00s\x00e\x00r\x00s", 2, "", "UTF-16 text: save it as UTF-8"},
	{"UTF-16 without BOM", "u\x00s\x00e\x00r\x00s\x00:\x00 \x001\x00", 2, "", "UTF-16 text"},
	{"UTF-32", "\xff\xfe\x00\x00u\x00\x00\x00", 2, "", "UTF-32 text"},
	{"NUL byte", "users: 1\x00\n", 2, ":1:9:", "NUL byte"},
	{"Latin-1", "name: caf\xe9\nusers: 1\n", 2, ":1:10:", "not UTF-8"},
	// Aliases, bombs, depth.
	{"undefined alias", "users: *nope\n", 2, ":1:8:", "alias *nope has no anchor &nope before it"},
	{"alias before its anchor", "closed: {iterations: *n}\nusers: &n 1\n", 2, ":1:22:", "no anchor &n before it"},
	{"self-referring alias", "thresholds: &x [a, *x]\n", 2, ":1:20:", "inside the value of its own anchor"},
	{"alias bomb", aliasBomb(), 2, ":", "more than 40000 values, aliases expanded"},
	{"alias bomb in a driver block", driverBomb(), 2, ":", "more than 40000 values, aliases expanded"},
	{"YAML directive", "%YAML 1.2\n---\nusers: 0\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 2, ":3:1:", "users is missing or 0"},
	{"deep flow nesting", "users: " + strings.Repeat("[", 100) + "1" + strings.Repeat("]", 100) + "\n", 2, ":1:71:", "nest more than 64 levels"},
	{"deep block nesting", deepBlock(100), 2, ":65:", "nest more than 64 levels"},
	{"deep nesting, 200 KB", "users: " + strings.Repeat("[", 200_000) + "\n", 2, ":1:71:", "nest more than 64 levels"},
	{"256 KiB of brackets", strings.Repeat("[", 256<<10-1), 2, ":1:65:", "nest more than 64 levels"},
	{"too many tokens", "thresholds: [" + strings.Repeat("a,", 60_000) + "a]\n", 2, ":1:", "more than 50000 YAML tokens"},
	{"many problems", "target: http://127.0.0.1:9\nusers: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\nthresholds: [" + strings.Repeat("a, ", 99) + "a]\n", 2, ":5:", "and 80 more problems"},
	// Values whose arithmetic overflows, and one message per problem.
	{"speedup 1e-300", okScenario + "speedup: 1e-300\n", 2, ":5:1:", "speedup 1e-300 is not between 1e-06 and 1e+06"},
	{"think at speedup 1e-6", "users: 1\nclosed: {iterations: 1, think: 500000h}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\nspeedup: 1e-6\n", 2, ":2:", "lasts longer than throng can time"},
	{"speedup .nan", okScenario + "speedup: .nan\n", 2, ":5:10:", "want a finite number, got .nan"},
	{"speedup .inf", okScenario + "speedup: .inf\n", 2, ":5:10:", "want a finite number, got .inf"},
	{"weight 1e400", "users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /, weight: 1e400}]\n", 2, ":4:29:", "want a finite number"},
	{"steady 2562047h", "users: 1\nphases: {steady: 2562047h}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 2, ":2:10:", "longer than throng can time"},
	{"phases together too long", "users: 1\nphases: {steady: 800000h, ramp_down: 800000h}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 2, ":2:1:", "longer than throng can time"},
	{"staged ramp too long", "users: 1000000\nphases: {ramp_up: {every: 10000h}, steady: 1s}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 2, ":2:1:", "longer than throng can time"},
	{"port above 65535", "users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:99999\nactions: [{path: /}]\n", 2, ":3:1:", "port 99999 is not between 1 and 65535"},
	{"users 1e30", "users: 1e30\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 2, ":1:8:", "want a whole number"},
	{"users beyond counting", "users: 9223372036854775807\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 2, ":1:1:", "more than throng can count"},
	{"body beyond memory", "users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /, method: POST, body_size: 1TB}]\n", 2, ":4:35:", "above 1GiB"},
	// Names.
	{"control character in name", okScenario + "name: \"a\\e[31mb\"\n", 2, ":5:1:", "control character"},
	// Work that cannot be done (exit 4).
	{"2e9 users", "users: 2000000000\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 4, ":1:1:", "of memory for the plan alone"},
	{"rate 1e18 per s", "model: open\nusers: 10\nopen: {rate: 1e18/s}\nphases: {steady: 10s}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 4, ":3:8:", "the engine schedules at most 1e+09/s"},
	{"too many arrivals", "model: open\nusers: 10\nopen: {rate: 1e8/s}\nphases: {steady: 876000h}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", 4, ":3:8:", "the engine counts at most"},
}

// okScenario is a valid scenario to which a class adds one key.
const okScenario = "users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n"

// aliasBomb is a "billion laughs" in the shape of a scenario: 3,000
// groups of 100 actions, 900,000 values from 16 KB.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("target: http://127.0.0.1:9\nphases: {steady: 1s}\n")
	b.WriteString("x-a: &a {path: /}\n")
	b.WriteString("x-l: &l [" + strings.Repeat("*a, ", 99) + "*a]\n")
	b.WriteString("x-g: &g {users: 1, actions: *l}\n")
	b.WriteString("groups: [" + strings.Repeat("*g, ", 2999) + "*g]\n")
	return b.String()
}

// driverBomb expands in the web driver's decoding of the actions: 600
// actions of 100 headers each, from 9 KB.
func driverBomb() string {
	var b strings.Builder
	b.WriteString("target: http://127.0.0.1:9\nusers: 1\nclosed: {iterations: 1}\n")
	b.WriteString("actions: [&a {path: /, headers: {")
	for i := range 100 {
		b.WriteString(fmt.Sprintf("h%d: v, ", i))
	}
	b.WriteString("}}" + strings.Repeat(", *a", 599) + "]\n")
	return b.String()
}

// deepBlock nests n mappings by indentation.
func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("  ", i) + "k:\n")
	}
	return b.String()
}

// runClass runs `throng run ARG` in this process and returns its exit
// code, its stderr, the CPU time it took and how many bytes it allocated.
// CPU time, not wall time: on a machine shared with other work the wall
// time measures the machine; a hang is caught by wallLimit.
func runClass(t *testing.T, args ...string) (int, string, time.Duration, uint64) {
	t.Helper()
	return runClassWith(t, newPreparer(), args...)
}

// runClassWith is runClass preparing with prep.
func runClassWith(t *testing.T, prep *runner.Preparer, args ...string) (int, string, time.Duration, uint64) {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c0, t0 := cpuTime(t), time.Now()
	code, _, stderr := throngWith(t, prep, append([]string{"run", "-q"}, args...)...)
	took, wall := cpuTime(t)-c0, time.Since(t0)
	runtime.ReadMemStats(&m1)
	if wall > wallLimit {
		t.Errorf("took %v of wall time", wall)
	}
	return code, stderr, took, m1.TotalAlloc - m0.TotalAlloc
}

// wallLimit catches a hang when CPU time is what is measured.
const wallLimit = 20 * time.Second

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkClass asserts one message, with its position, the exit code and
// the bounds: under a second and 100 MB allocated (which bounds the peak).
func checkClass(t *testing.T, code int, stderr string, took time.Duration, alloc uint64, wantCode int, at, want string) {
	t.Helper()
	t.Logf("exit %d, %v of CPU, %.1f MB allocated", code, took.Round(time.Millisecond), float64(alloc)/(1<<20))
	if code != wantCode {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, wantCode, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 && !strings.Contains(want, "more problems") {
		t.Errorf("%d lines, want one message:\n%s", len(lines), strings.Join(lines[:min(len(lines), 5)], "\n"))
	}
	if len(stderr) > 4000 {
		stderr = stderr[:4000] + "..."
	}
	if !strings.Contains(stderr, want) || (at != "" && !strings.Contains(stderr, at)) {
		t.Errorf("stderr %q does not say %q at %q", stderr, want, at)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("a panic: %s", stderr)
	}
	if took > time.Second {
		t.Errorf("took %v of CPU, want under 1 s", took)
	}
	if alloc > 100<<20 {
		t.Errorf("allocated %d MB, want under 100 MB", alloc>>20)
	}
}

// Every class of bad scenario file gives its exit code and one message.
func TestBadScenarioClasses(t *testing.T) {
	// The memory available is fixed, so that "2e9 users" is refused on a
	// machine of any size.
	prep := newPreparer()
	prep.Memory = fixedMemory(24<<30, "MemAvailable in /proc/meminfo")
	dir := t.TempDir()
	for _, c := range fileClasses {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stderr, took, alloc := runClassWith(t, prep, path)
			at := c.at
			if at != "" {
				at = path + at
			}
			checkClass(t, code, stderr, took, alloc, c.code, at, c.want)
		})
	}
}

// A scenario path that is not a regular file is refused before it is
// read: a FIFO used to hang, /dev/zero to read gigabytes.
func TestScenarioNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("users: 1\n"+strings.Repeat("# padding\n", 30_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{dir, "is a directory"},
		{fifo, "is a FIFO"},
		{"/dev/zero", "is a character device"},
		{zero, "is a character device"},
		{"/dev/null", "is a character device"},
		{big, "too large for a scenario file (at most 256 KiB)"},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			code, stderr, took, alloc := runClass(t, c.path)
			checkClass(t, code, stderr, took, alloc, ExitBadInput, "scenario "+c.path+":", c.want)
		})
	}
}

// A UTF-8 byte-order mark is accepted: the file runs as without it.
func TestScenarioWithBOM(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bom.yaml")
	os.WriteFile(path, []byte("\xef\xbb\xbf"+okScenario), 0o644)
	s, err := loadScenario(path)
	if err != nil || s.Users != 1 || s.Closed.Iterations != 1 {
		t.Fatalf("a scenario with a BOM: %v %+v", err, s)
	}
}

// One problem, one message: a value that cannot be decoded is not also
// reported as missing.
func TestOneMessagePerProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(path, []byte("users: 1e30\nphases: {steady: 30}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n"), 0o644)
	code, stderr, _, _ := runClass(t, path)
	if code != ExitBadInput || strings.Count(stderr, "\n") != 2 || !strings.Contains(stderr, "users: want a whole number") ||
		!strings.Contains(stderr, "phases.steady: duration \"30\" has no unit") || strings.Contains(stderr, "missing") ||
		strings.Contains(stderr, "needs an end") {
		t.Errorf("exit %d, want two messages, one per problem:\n%s", code, stderr)
	}
}

// Every file a scenario names — a mail list file, a web data feed, a
// ${file:PATH} secret — is read through one reader that refuses what is
// not a regular file, at once and with one message naming the path: a
// FIFO as mail.lists.file once hung for 26 minutes, ignoring SIGTERM, and
// /dev/zero took 6 s and 1.16 GB.
func TestNamedFilesNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	scenarios := map[string]string{
		"mail lists": "users: 1\nmodel: open\nphases: {steady: 1s}\ntarget: imap://127.0.0.1:9?smtp=127.0.0.1:9\n" +
			"mail:\n  lists: {file: %q}\nactions: [{name: send, rate: 1/s}]\n",
		"web feed": "users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\n" +
			"web:\n  feeds: [{name: f, file: %q}]\njourneys: [{name: j, steps: [{path: \"/{{ .a }}\"}]}]\n",
		"secret file": "users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\n" +
			"actions: [{path: /, headers: {Authorization: \"${file:%s}\"}}]\n",
	}
	for name, src := range scenarios {
		for _, c := range []struct{ path, want string }{
			{fifo, "a FIFO (named pipe), not a regular file"},
			{"/dev/zero", "a character device, not a regular file"},
			{dir, "a directory, not a regular file"},
		} {
			t.Run(name+"/"+filepath.Base(c.path), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "s.yaml")
				os.WriteFile(path, []byte(fmt.Sprintf(src, c.path)), 0o644)
				code, stderr, took, alloc := runClass(t, path)
				checkClass(t, code, stderr, took, alloc, ExitBadInput, c.path, c.want)
			})
		}
	}
}

// A value that cannot be decoded is said once, at its place: the problems
// that depend on it (the end of a closed run, trim against runs, the
// actions that journeys make) are not said again as if it were missing.
func TestOneMessagePerUndecodedValue(t *testing.T) {
	for _, c := range []struct{ src, at, want string }{
		{"users: 1\nclosed: {iterations: 1e30}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", ":2:22", `closed.iterations: want a whole number, got "1e30"`},
		{"users: 1\nclosed: {total: zz}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", ":2:17", `closed.total: want a whole number, got "zz"`},
		{"users: 1\nruns: zz\ntrim: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", ":2:7", `runs: want a whole number, got "zz"`},
		{"users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\njourneys: zz\n", ":4:11", `journeys: want a list, got "zz"`},
		{"users: 1\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: zz\n", ":4:10", `actions: want a list, got "zz"`},
		{"users: 1e30\nclosed: {iterations: 1}\ntarget: http://127.0.0.1:9\nactions: [{path: /}]\n", ":1:8", `users: want a whole number, got "1e30"`},
	} {
		t.Run(c.want, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.yaml")
			os.WriteFile(path, []byte(c.src), 0o644)
			code, stderr, took, alloc := runClass(t, path)
			checkClass(t, code, stderr, took, alloc, ExitBadInput, path+c.at, c.want)
		})
	}
}
