package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/result"
)

// The static storm keeps the event loops; journeys (and anything a
// dynamic user does) run one goroutine per user.
func TestJourneysChooseGoroutines(t *testing.T) {
	loops := ""
	for _, k := range []string{"io_uring", "epoll"} {
		if engine.Supported(k) == nil {
			loops = k
			break
		}
	}
	for _, tc := range []struct{ preset, want string }{{"web-static", loops}, {"web-open", loops}, {"web-shop", "goroutines"}} {
		if tc.want == "" {
			t.Skip("no event loop on this kernel")
		}
		job, err := prepareArg(t, nil, tc.preset, setting("target", "http://127.0.0.1:9"))
		if err != nil {
			t.Fatal(err)
		}
		if job.Kind != tc.want {
			t.Errorf("%s: engine %s, want %s", tc.preset, job.Kind, tc.want)
		}
	}
}

// web-shop runs against the embedded shop with nothing installed: every
// journey goes through (no error, every check passes), an iteration is a
// journey (users x iterations journeys, each step as often as its
// journeys say), and the result names the protocol.
func TestWebShopPreset(t *testing.T) {
	out := filepath.Join(t.TempDir(), "shop.json")
	code, stdout, stderr := throng(t, "run", "web-shop", "--users", "4", "--iterations", "5", "--set", "think=0s", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var all *result.Summary
	for i := range run.Repetitions[0].Summaries {
		if s := &run.Repetitions[0].Summaries[i]; s.Phase == "all" {
			all = s
		}
	}
	rows := map[string]result.ActionSummary{}
	for _, a := range all.Actions {
		rows[a.Name] = a
	}
	buy, browse := rows["journey:buy"].Count, rows["journey:browse"].Count
	if buy+browse != 20 || buy == 0 || browse == 0 {
		t.Errorf("journeys: %d buy + %d browse, want 20 (4 users x 5)", buy, browse)
	}
	for name, want := range map[string]uint64{"home": buy, "login": buy, "search": buy, "add-to-cart": 2 * buy, "checkout": buy,
		"browse-home": browse, "products": browse, "check:ordered": buy, "check:catalogue": browse, "redirect": buy + browse} {
		if r := rows[name]; r.Count != want || r.Errors != 0 {
			t.Errorf("%s: %d (%d errors), want %d and no error", name, r.Count, r.Errors, want)
		}
	}
	if all.Total.Errors != 0 || all.Total.Count != 6*buy+2*browse {
		t.Errorf("total: %d actions, %d errors; want the %d steps", all.Total.Count, all.Total.Errors, 6*buy+2*browse)
	}
	if run.Meta.Settings["protocol"] != "http/1.1" || run.Meta.Engine != "goroutines" {
		t.Errorf("protocol %q engine %q", run.Meta.Settings["protocol"], run.Meta.Engine)
	}
	code, text, _ := throng(t, "report", out)
	if code != 0 || !strings.Contains(text, "5 journeys per user") || !strings.Contains(text, "Protocol: http/1.1; cookies on, up to 10 redirects followed.") {
		t.Errorf("report:\n%s", text)
	}
	// Over h2c against the same embedded server.
	code, stdout, stderr = throng(t, "run", "web-shop", "--users", "2", "--iterations", "2", "--set", "think=0s", "--set", "protocol=h2c", "-q", "-o", out)
	run, _ = result.ReadFile(out)
	if code != 0 || run == nil || run.Meta.Settings["protocol"] != "h2c (prior knowledge)" {
		t.Errorf("h2c: exit %d %v\n%s%s", code, run != nil && run.Meta.Settings != nil, stdout, stderr)
	}
}

// Thresholds name a journey's row and a check's; one on a check the
// scenario does not have is bad input.
func TestJourneyThresholds(t *testing.T) {
	out := filepath.Join(t.TempDir(), "shop.json")
	code, stdout, _ := throng(t, "run", "web-shop", "--users", "2", "--iterations", "2", "--set", "think=0s", "-o", out,
		"--threshold", "journey:buy.p99 < 30s", "--threshold", "check:ordered.error_rate < 1%", "--threshold", "all: journey:browse.errors == 0")
	if code != 0 || !strings.Contains(stdout, "pass  steady: journey:buy.p99 < 30s — p99 of journey:buy") || !strings.Contains(stdout, "pass  steady: check:ordered.error_rate < 1% — error_rate of check:ordered") {
		t.Errorf("exit %d\n%s", code, stdout)
	}
	code, _, stderr := throng(t, "run", "web-shop", "--users", "1", "--iterations", "1", "-o", out, "--threshold", "check:orderd.error_rate < 1%")
	if code != 2 || !strings.Contains(stderr, `no action named "check:orderd" (did you mean "check:ordered"?)`) {
		t.Errorf("unknown check: exit %d\n%s", code, stderr)
	}
}

// Each bad input of the issue is refused before the run: exit 2, its
// place in the file.
func TestJourneyBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "accounts.csv")
	os.WriteFile(csv, []byte("login,password\na,1\nb,2,3\n"), 0o644)
	short := filepath.Join(dir, "short.csv")
	os.WriteFile(short, []byte("login\na\n"), 0o644)
	for _, tc := range []struct{ name, src, want string }{
		{"undefined variable", "users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {path: '/cart/{{ .cart }}'}\n",
			"j.yaml:6:26: journeys[0].steps[0].path: path: {{ .cart }} is not defined here"},
		{"missing data file", "users: 1\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: nowhere.csv}]}\nactions: [{path: /}]\n",
			"j.yaml:3:25: web.feeds[0].file: feed f: nowhere.csv: no such file or directory"},
		{"malformed row", "users: 1\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: " + csv + "}]}\nactions: [{path: /}]\n",
			"accounts.csv:3: a row with the wrong number of fields"},
		{"too short", "users: 2\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: " + short + "}]}\nactions: [{path: /}]\n",
			"feed f has 1 rows, the plan needs 2, one per user (2 users)"},
		{"journeys and actions", "users: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\njourneys: [{name: j, steps: [{path: /}]}]\n",
			"j.yaml:3:1: actions: give actions (a weighted mix) or journeys (ordered steps), not both"},
	} {
		path := filepath.Join(dir, "j.yaml")
		os.WriteFile(path, []byte(tc.src), 0o644)
		code, _, stderr := throng(t, "run", path, "--target", "http://127.0.0.1:9", "-q", "-o", filepath.Join(dir, "out.json"))
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d\n%s\nwant %s", tc.name, code, stderr, tc.want)
		}
	}
}

// The journeys example of docs/scenario.md runs against the embedded
// shop: every journey goes through.
func TestDocJourneyExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "### Journeys")
	j := strings.Index(text[i:], "```yaml\n")
	k := strings.Index(text[i+j+8:], "```")
	if i < 0 || j < 0 || k < 0 {
		t.Fatal("no yaml block after ### Journeys in docs/scenario.md")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "journeys.yaml")
	os.WriteFile(path, []byte(text[i+j+8:i+j+8+k]), 0o644)
	out := filepath.Join(dir, "out.json")
	code, stdout, stderr := throng(t, "run", path, "--users", "2", "--iterations", "3", "--speedup", "1000", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	journeys := uint64(0)
	for _, a := range all.Actions {
		if a.Errors != 0 {
			t.Errorf("%s: %v", a.Name, a.Messages)
		}
		if strings.HasPrefix(a.Name, "journey:") {
			journeys += a.Count
		}
	}
	if journeys != 6 {
		t.Errorf("%d journeys, want 6", journeys)
	}
}

// The web-shop journeys in the open model: each of the 20 arrivals (20/s,
// uniform, over 1 s) is one journey, done whole by one of 4 users (the
// session cookie and the CSRF token of the journey's own log-in): no
// error, nothing dropped, each step as often as its journeys say.
func TestWebShopOpenModel(t *testing.T) {
	src, err := os.ReadFile("../../presets/web-shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "closed:\n  iterations: 20\n", "model: open\nopen: {rate: 20/s, arrivals: uniform}\n", 1)
	text2 := strings.Replace(text, "phases: {ramp_up: {duration: $ramp}}\n", "phases: {ramp_up: {duration: $ramp}, steady: 1s}\n", 1)
	if text == string(src) || text2 == text {
		t.Fatal("presets/web-shop.yaml: no closed block or phases to replace")
	}
	text = text2
	dir := t.TempDir()
	path := filepath.Join(dir, "shop-open.yaml")
	os.WriteFile(path, []byte(text), 0o644)
	out := filepath.Join(dir, "out.json")
	code, stdout, stderr := throng(t, "run", path, "--users", "4", "--set", "think=0s", "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	rows := map[string]result.ActionSummary{}
	for _, a := range all.Actions {
		rows[a.Name] = a
		if a.Errors != 0 || a.Dropped != 0 {
			t.Errorf("%s: %d errors %v, %d dropped", a.Name, a.Errors, a.Messages, a.Dropped)
		}
	}
	buy, browse := rows["journey:buy"].Count, rows["journey:browse"].Count
	if buy+browse != 20 || buy == 0 || browse == 0 {
		t.Fatalf("journeys buy %d, browse %d; want 20 between them", buy, browse)
	}
	for name, n := range map[string]uint64{"home": buy, "login": buy, "search": buy, "add-to-cart": 2 * buy, "checkout": buy, "browse-home": browse, "products": browse} {
		if rows[name].Count != n {
			t.Errorf("%s done %d times, want %d", name, rows[name].Count, n)
		}
	}
}

// The journey groups example of docs/scenario.md against the embedded
// shop: each group's users do only their group's journey, each exactly as
// often as the group's users times its iterations, every step as often as
// its journey says, without an error.
func TestDocJourneyGroupsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "### Journey groups")
	j := strings.Index(text[i:], "```yaml\n")
	k := strings.Index(text[i+j+8:], "```")
	if i < 0 || j < 0 || k < 0 {
		t.Fatal("no yaml block after ### Journey groups in docs/scenario.md")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "groups.yaml")
	os.WriteFile(path, []byte(text[i+j+8:i+j+8+k]), 0o644)
	out := filepath.Join(dir, "out.json")
	code, stdout, stderr := throng(t, "run", path, "-q", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	rows := map[string]result.ActionSummary{}
	for _, a := range all.Actions {
		rows[a.Name] = a
		if a.Errors != 0 {
			t.Errorf("%s: %d errors %v", a.Name, a.Errors, a.Messages)
		}
	}
	// browsers: 8 users x 3 journeys; buyers: 2 users x 2.
	for name, want := range map[string]uint64{
		"journey:look": 24, "front": 24, "catalogue": 24, "check:front-page": 24,
		"journey:purchase": 4, "sign-in": 4, "find": 4, "put-in-cart": 8, "pay": 4, "check:paid": 4,
	} {
		if got := rows[name].Count; got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
}

// Bad journey groups are refused before the run: exit 2, file:line:col.
func TestJourneyGroupsBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	head := "phases: {steady: 1s}\ngroups:\n"
	for _, tc := range []struct{ name, src, want string }{
		{"step name in two groups", head +
			"  - {name: a, users: 1, journeys: [{name: ja, steps: [{name: home, path: /}]}]}\n" +
			"  - {name: b, users: 1, journeys: [{name: jb, steps: [{name: home, path: /x}]}]}\n",
			`j.yaml:4:56: groups[1].journeys[0].steps[0].name: action name "home" is already used by`},
		{"journey name in two groups", head +
			"  - {name: a, users: 1, journeys: [{name: j, steps: [{name: s1, path: /}]}]}\n" +
			"  - {name: b, users: 1, journeys: [{name: j, steps: [{name: s2, path: /}]}]}\n",
			`j.yaml:4:37: groups[1].journeys[0].name: journey name "j" is already used by groups[0].journeys[0]`},
		{"actions and journeys in a group", head +
			"  - {name: a, users: 1, actions: [{path: /}], journeys: [{name: j, steps: [{path: /}]}]}\n",
			"j.yaml:3:47: groups[0].journeys: give a group actions (a weighted mix) or journeys (ordered steps), not both"},
		{"journeys in an open group", head +
			"  - {name: a, users: 1, model: open, journeys: [{name: j, steps: [{path: /}]}]}\n",
			"j.yaml:3:25: groups[0].model: a group's journeys run in the closed model"},
		{"top-level journeys with groups", head +
			"  - {name: a, users: 1, journeys: [{name: j, steps: [{path: /}]}]}\njourneys: [{name: k, steps: [{path: /}]}]\n",
			"j.yaml:4:1: journeys: with groups, journeys belongs in each group"},
		{"iterations in a group of actions", head +
			"  - {name: a, users: 1, closed: {iterations: 2}, actions: [{path: /}]}\n",
			"groups[0].closed.iterations: a group of actions runs for the phases"},
	} {
		path := filepath.Join(dir, "j.yaml")
		os.WriteFile(path, []byte(tc.src), 0o644)
		code, _, stderr := throng(t, "run", path, "--target", "http://127.0.0.1:9", "-q", "-o", filepath.Join(dir, "out.json"))
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d\n%s\nwant %s", tc.name, code, stderr, tc.want)
		}
	}
}
