package cli

// The toy family is the worked example of CONTRIBUTING.md, "Adding a
// protocol family": a whole family in one file, wired in the way
// cli/builtin.go wires the real ones (one more driver.Family in the
// Preparer's list), and run end to end through `throng run` and the same
// preparation as every family. Its protocol is one line each way over TCP:
//
//	client: hello NAME CLIENT\n   server: ok\n (or no\n: NAME has no account)
//	client: ping\n                server: pong\n
//
// and it uses every ability a family may declare: a block of its own, an
// embedded server that provisions accounts (driver.Provisioner), the
// program's version (driver.Env), Preflight, its own counters
// (driver.CounterSources) and settings for the result (driver.Describer).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// toyFamily is the family's Family: what its package would export. With
// embedded false it has no embedded server (a family need not have one).
func toyFamily(servers *toyServers, embedded bool) driver.Family {
	fam := driver.Family{
		Name: "toy",
		Decode: func(block scenario.Node, env driver.Env) (driver.Config, []error) {
			return decodeToy(block, env)
		},
	}
	if embedded {
		fam.Embedded = func(listen string) (driver.Target, error) {
			s, err := servers.start(listen)
			if err != nil {
				return nil, err // never a nil *toyServer in an interface
			}
			return s, nil
		}
	}
	return fam
}

// toySettings is the scenario's "toy:" block.
type toySettings struct {
	Greeting string `yaml:"greeting"`
}

// toyConfig is a decoded block bound to a target: the driver.Config.
type toyConfig struct {
	toySettings
	addr   string
	client string             // "throng/VERSION": the program's version, given as data
	prov   driver.Provisioner // the target's, when it has the ability
	pongs  atomic.Int64
}

func decodeToy(block scenario.Node, env driver.Env) (*toyConfig, []error) {
	c := &toyConfig{toySettings: toySettings{Greeting: "hello"}, client: "throng/" + env.Version}
	errs := block.Decode(&c.toySettings)
	u, err := url.Parse(env.Target.URL())
	if err != nil || u.Scheme != "toy" || u.Host == "" {
		errs = append(errs, fmt.Errorf("target %q: the toy family needs a toy://HOST:PORT URL", env.Target.URL()))
	} else {
		c.addr = u.Host
	}
	if p, ok := env.Target.(driver.Provisioner); ok {
		c.prov = p
	}
	return c, errs
}

var (
	_ driver.Config         = (*toyConfig)(nil)
	_ driver.Preflighter    = (*toyConfig)(nil)
	_ driver.CounterSources = (*toyConfig)(nil)
	_ driver.Describer      = (*toyConfig)(nil)
)

func (c *toyConfig) Validate() []error { return nil }

// Compile accepts actions without keys of their own.
func (c *toyConfig) Compile(a scenario.Action) (driver.Action, []error) {
	var none struct{}
	return a.Name, a.Params.Decode(&none)
}

func toyUser(id int) string { return fmt.Sprintf("user%04d", id+1) }

// Prepare creates the users' accounts on a server that lets it.
func (c *toyConfig) Prepare(ctx context.Context, pop driver.Population) error {
	if c.prov == nil {
		return nil
	}
	var users []string
	for _, id := range pop.Users {
		users = append(users, toyUser(id))
	}
	return c.prov.Provision(users, "", nil)
}

func (c *toyConfig) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, driver.Errorf(driver.Dial, err)
	}
	s := &toySession{c: c, conn: conn, r: bufio.NewReader(conn)}
	line, err := s.say(ctx, "hello "+toyUser(u.ID)+" "+c.client)
	switch {
	case err != nil:
		conn.Close()
		return nil, err
	case line != "ok":
		conn.Close()
		return nil, driver.Errorf(driver.Auth, fmt.Errorf("%s has no account", toyUser(u.ID)))
	}
	return s, nil
}

func (c *toyConfig) Preflight(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("toy server %s: %w", c.addr, err)
	}
	return conn.Close()
}

func (c *toyConfig) CounterSources() []sampler.Source { return []sampler.Source{toySource{c}} }

func (c *toyConfig) Describe() map[string]string {
	return map[string]string{"greeting": c.Greeting, "client": c.client}
}

// toySource is the driver's own counters: the pongs received.
type toySource struct{ c *toyConfig }

func (toySource) Name() string { return "toy" }
func (s toySource) Sample(ctx context.Context, emit func(sampler.Point)) error {
	emit(sampler.Point{Name: "toy_pongs_total", Kind: sampler.Counter, Value: float64(s.c.pongs.Load())})
	return nil
}

type toySession struct {
	c    *toyConfig
	conn net.Conn
	r    *bufio.Reader
}

// say sends one line and reads the answer's.
func (s *toySession) say(ctx context.Context, line string) (string, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	s.conn.SetDeadline(deadline)
	if _, err := s.conn.Write([]byte(line + "\n")); err != nil {
		return "", driver.Errorf(driver.IO, err)
	}
	answer, err := s.r.ReadString('\n')
	if err != nil {
		return "", driver.Errorf(driver.IO, err)
	}
	return strings.TrimSpace(answer), nil
}

func (s *toySession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	answer, err := s.say(ctx, "ping")
	if err != nil {
		return driver.Outcome{BytesOut: 5}, err
	}
	if answer != "pong" {
		return driver.Outcome{BytesOut: 5, BytesIn: int64(len(answer) + 1)}, driver.Errorf(driver.Protocol, fmt.Errorf("%q is no pong", answer))
	}
	s.c.pongs.Add(1)
	return driver.Outcome{BytesOut: 5, BytesIn: 5}, nil
}

func (s *toySession) Close() error { return s.conn.Close() }

// toyServers are the embedded toy servers a test started.
type toyServers struct {
	mu  sync.Mutex
	all []*toyServer
}

func (ss *toyServers) start(listen string) (*toyServer, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	s := &toyServer{ln: ln, accounts: map[string]bool{}}
	go s.serve()
	ss.mu.Lock()
	ss.all = append(ss.all, s)
	ss.mu.Unlock()
	return s, nil
}

// toyServer is the embedded server: a driver.Target that provisions.
type toyServer struct {
	ln          net.Listener
	mu          sync.Mutex
	accounts    map[string]bool // once provisioned, only these may say hello
	provisioned bool
	clients     map[string]bool // the CLIENT words heard
	closed      atomic.Bool
}

var (
	_ driver.Target      = (*toyServer)(nil)
	_ driver.Provisioner = (*toyServer)(nil)
)

func (s *toyServer) URL() string { return "toy://" + s.ln.Addr().String() }

func (s *toyServer) Close() error {
	s.closed.Store(true)
	return s.ln.Close()
}

func (s *toyServer) Provision(users []string, _ string, _ map[string][]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.provisioned = true
	for _, u := range users {
		s.accounts[u] = true
	}
	return nil
}

func (s *toyServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				f := strings.Fields(line)
				switch {
				case len(f) == 3 && f[0] == "hello":
					s.mu.Lock()
					ok := s.provisioned && s.accounts[f[1]]
					if s.clients == nil {
						s.clients = map[string]bool{}
					}
					s.clients[f[2]] = true
					s.mu.Unlock()
					answer := "no\n"
					if ok {
						answer = "ok\n"
					}
					c.Write([]byte(answer))
				case len(f) == 1 && f[0] == "ping":
					c.Write([]byte("pong\n"))
				default:
					c.Write([]byte("what?\n"))
				}
			}
		}()
	}
}

// toyPrep is throng's Preparer with the toy family added: the one line.
func toyPrep(servers *toyServers, embedded bool) *runner.Preparer {
	prep := newPreparer()
	prep.Version = "v9.9.9-toy"
	prep.Families = append(prep.Families, toyFamily(servers, embedded))
	return prep
}

const toyScenario = `name: toy
users: 3
closed: {iterations: 40}
interval: 200ms
toy:
  greeting: hi
actions:
  - {name: ping}
`

func writeToy(t *testing.T, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "toy.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// The toy family, added to the Preparer's list and to nothing else, runs
// end to end through `throng run`: its block is decoded, its embedded
// server started (and stopped after), its accounts provisioned through the
// target's ability, the program's version reaches its driver as data, its
// own counters are read beside the load, and the result records it all.
func TestToyFamilyEndToEnd(t *testing.T) {
	servers := &toyServers{}
	out := filepath.Join(t.TempDir(), "toy.json")
	code, stdout, stderr := throngWith(t, toyPrep(servers, true), "run", writeToy(t, toyScenario), "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	// Provisioning: without the accounts, every hello is refused (auth).
	if all.Total.Count != 120 || all.Total.Errors != 0 {
		t.Errorf("%d actions, %d errors %v; want 120 pings, none failed", all.Total.Count, all.Total.Errors, all.Total.ErrorsByClass)
	}
	m := run.Meta
	if m.Driver != "toy" || !strings.HasPrefix(m.Target, "embedded toy server at toy://127.0.0.1:") || m.Versions.Throng != "v9.9.9-toy" {
		t.Errorf("meta: driver %q target %q version %q", m.Driver, m.Target, m.Versions.Throng)
	}
	// The version, given as data, is the driver's: it said it to the server.
	if m.Settings["client"] != "throng/v9.9.9-toy" || m.Settings["greeting"] != "hi" {
		t.Errorf("driver settings %v", m.Settings)
	}
	if len(servers.all) != 1 {
		t.Fatalf("%d embedded servers started, want 1", len(servers.all))
	}
	srv := servers.all[0]
	if !srv.closed.Load() || len(srv.accounts) != 3 || !srv.clients["throng/v9.9.9-toy"] {
		t.Errorf("server closed %v, accounts %v, clients %v", srv.closed.Load(), srv.accounts, srv.clients)
	}
	// The driver's counters were read at every interval, and they add up.
	var toy *result.CounterSummary
	for i, c := range all.Counters {
		if c.Source == "toy" {
			toy = &all.Counters[i]
		}
	}
	if toy == nil || toy.Up == 0 || toy.Down != 0 {
		t.Fatalf("no toy counters read: %+v", all.Counters)
	}
}

// A family declares its abilities; each is used, or the run shows it.
func TestToyFamilyAbilities(t *testing.T) {
	t.Run("preflight", func(t *testing.T) {
		// A target where nothing listens: refused before anything runs.
		code, _, stderr := throngWith(t, toyPrep(&toyServers{}, true), "run", writeToy(t, toyScenario),
			"--target", "toy://127.0.0.1:9", "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
		if code != ExitFailure || !strings.Contains(stderr, "toy server 127.0.0.1:9") || !strings.Contains(stderr, "nothing was run") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	t.Run("no embedded server", func(t *testing.T) {
		// A family without one refuses target embedded, where it is set.
		file := writeToy(t, toyScenario+"target: embedded\n")
		code, _, stderr := throngWith(t, toyPrep(&toyServers{}, false), "run", file, "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
		want := file + ":9:1: target: the toy family has no embedded server: give the URL of a server"
		if code != ExitBadInput || !strings.Contains(stderr, want) {
			t.Errorf("exit %d: %s\nwant %q", code, stderr, want)
		}
		code, _, stderr = throngWith(t, toyPrep(&toyServers{}, false), "serve", "toy")
		if code != ExitBadInput || !strings.Contains(stderr, "the toy family has no embedded server") {
			t.Errorf("serve: exit %d: %s", code, stderr)
		}
	})
	t.Run("target of the wrong kind", func(t *testing.T) {
		code, _, stderr := throngWith(t, toyPrep(&toyServers{}, true), "run", writeToy(t, toyScenario),
			"--target", "http://127.0.0.1:9", "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
		if code != ExitBadInput || !strings.Contains(stderr, `flag --target: target: "http://127.0.0.1:9": the toy family needs a toy://HOST:PORT URL`) {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
}

// A family's local schemes are its own: file:///path is a target of the
// files family because it declares the scheme; without the declaration it
// is no URL at all.
func TestLocalSchemesAreTheFamilys(t *testing.T) {
	file := writeToy(t, "users: 1\nclosed: {iterations: 1}\ntarget: file:///tmp/throng-local-scheme\nfiles:\n  population: {files: 1}\nactions:\n  - {op: copy-down}\n")
	job, err := prepareArg(t, nil, file)
	if err != nil {
		t.Fatalf("with the files family's file scheme: %v", err)
	}
	job.Close()
	prep := newPreparer()
	fam, _ := prep.Family("files")
	fam.LocalSchemes = nil
	_, err = prepareArg(t, prep, file)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitBadInput || !strings.Contains(err.Error(), file+`:3:1: target: target "file:///tmp/throng-local-scheme" is not "embedded" nor a URL`) {
		t.Errorf("without the declaration: %v", err)
	}
}

// The code CONTRIBUTING.md shows is the toy family's and builtin.go's own:
// every line of its snippets is a line of those files (the list's "..."
// and the toy's own line aside), so the guide cannot drift from code that
// runs.
func TestContributingSnippetsAreCode(t *testing.T) {
	guide, err := os.ReadFile("../../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := func(file string) map[string]bool {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, l := range strings.Split(string(b), "\n") {
			out[strings.TrimSpace(l)] = true
		}
		return out
	}
	toy, builtin := lines("toyfamily_test.go"), lines("builtin.go")
	blocks := strings.Split(string(guide), "```go\n")[1:]
	if len(blocks) < 4 {
		t.Fatalf("%d Go snippets in CONTRIBUTING.md", len(blocks))
	}
	for _, block := range blocks {
		code, _, _ := strings.Cut(block, "```")
		from, name := toy, "toyfamily_test.go"
		if strings.Contains(code, "[]driver.Family{") {
			from, name = builtin, "builtin.go"
		}
		for _, l := range strings.Split(code, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || (name == "builtin.go" && (l == "..." || l == "toy.Family(),")) {
				continue
			}
			if !from[l] {
				t.Errorf("CONTRIBUTING.md shows %q, which is not a line of %s", l, name)
			}
		}
	}
}
