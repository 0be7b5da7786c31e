package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/agent"
	"github.com/throng-io/throng/internal/result"
	webtarget "github.com/throng-io/throng/internal/targets/web"
)

// `throng run`, `throng run A B` (several configurations) and `throng run
// --agents` prepare through the same Preparer: for the same file and the
// same flags (the agent receiving them over the wire, by key path), their
// results record the same metadata — the scenario, the settings by key
// path, the plan's users, phases, actions and rate, the engine, the
// driver's settings — and their plans did the same work. Only what is the
// path's own differs: when it started, the command line, the merged run's
// "1/1 over 1 agents", the configurations' interleaving id and the run's
// id (each run draws its own: it names the run on a broker).
func TestRunRunmanyAgentSameMeta(t *testing.T) {
	srv, err := webtarget.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	scen := func(label string) string {
		f := filepath.Join(dir, label+".yaml")
		os.WriteFile(f, []byte("name: same\nlabel: "+label+"\nusers: 1\nclosed: {iterations: 5}\ninterval: 200ms\nactions:\n  - {name: page, path: /}\n"), 0o644)
		return f
	}
	a, b := scen("a"), scen("b")
	flags := []string{"--target", srv.URL(), "--users", "3", "--iterations", "40", "--seed", "7",
		"--threshold", "p99 < 5s", "--engine", "goroutines", "-q"}

	// An agent in this process, serving plaintext.
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("0123456789abcdef-same-meta"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		s := &agent.Server{Token: []byte("0123456789abcdef-same-meta"), Log: io.Discard,
			Runner: &agent.SegmentRunner{Prep: newPreparer(), Dir: filepath.Join(dir, "agent")}}
		s.Serve(ctx, ln)
		close(served)
	}()
	defer func() { cancel(); <-served }()

	runs := map[string]string{
		"run":     filepath.Join(dir, "run.json"),
		"runmany": filepath.Join(dir, "many", "a.json"),
		"agent":   filepath.Join(dir, "agent.json"),
	}
	for name, args := range map[string][]string{
		"run":     append([]string{"run", a, "-o", runs["run"]}, flags...),
		"runmany": append([]string{"run", a, b, "-o", filepath.Join(dir, "many")}, flags...),
		"agent": append([]string{"run", a, "-o", runs["agent"], "--agents", ln.Addr().String(), "--agents-insecure",
			"--token-file", token}, flags...),
	} {
		if code, stdout, stderr := throng(t, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		}
	}
	metas := map[string]result.Meta{}
	for name, path := range runs {
		run, err := result.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		all := result.Find(run.Repetitions[0].Summaries, result.All)
		if all.Total.Count != 120 || all.Total.Errors != 0 {
			t.Errorf("%s: %d actions, %d errors; want 120, none", name, all.Total.Count, all.Total.Errors)
		}
		m := run.Meta
		if name == "agent" && m.Segment != "1/1 over 1 agents" {
			t.Errorf("agent: segment %q", m.Segment)
		}
		if m.RunID == "" {
			t.Errorf("%s: no run id", name)
		}
		m.StartedAt, m.Command, m.Interleave, m.Segment, m.RunID = time.Time{}, nil, "", "", ""
		metas[name] = m
	}
	want, _ := json.MarshalIndent(metas["run"], "", " ")
	for _, name := range []string{"runmany", "agent"} {
		got, _ := json.MarshalIndent(metas[name], "", " ")
		if string(got) != string(want) {
			t.Errorf("%s's metadata differs from run's:\n%s", name, lineDiff(string(want), string(got)))
		}
	}
	// What was recorded: the settings by key path, never a flag.
	over := metas["run"].Overrides
	if over["users"] != "3" || over["closed.iterations"] != "40" || over["thresholds"] != "p99 < 5s" || over["target"] != srv.URL() {
		t.Errorf("overrides %v", over)
	}
	for k := range over {
		if strings.HasPrefix(k, "-") {
			t.Errorf("a flag in the record: %q", k)
		}
	}
}

// lineDiff shows the lines of b that are not a's, and a's that are not b's.
func lineDiff(a, b string) string {
	var out []string
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	in := func(l string, ls []string) bool {
		for _, x := range ls {
			if x == l {
				return true
			}
		}
		return false
	}
	for _, l := range al {
		if !in(l, bl) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if !in(l, al) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
