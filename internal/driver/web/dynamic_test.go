package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// recSink counts the driver's events by row and class.
type recSink struct {
	mu   sync.Mutex
	n    map[string]int // "row/class"
	msgs []string
	c    *Config
}

func (s *recSink) Event(i int, _ time.Time, _ time.Duration, _, _ int64, class driver.Class, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[fmt.Sprintf("%s/%s", s.c.EventActions()[i], class)]++
	if err != nil {
		s.msgs = append(s.msgs, err.Error())
	}
}

// journeyOf decodes a scenario (its web block, then its journeys or
// actions) against target and compiles every step, by name.
func journeyOf(t *testing.T, target, src string) (*Config, map[string]driver.Action, *recSink) {
	t.Helper()
	c, acts, errs := compileAll(target, src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	sink := &recSink{n: map[string]int{}, c: c}
	c.Observe(sink)
	return c, acts, sink
}

func compileAll(target, src string) (*Config, map[string]driver.Action, []error) {
	s, err := scenario.Parse("t.yaml", []byte(src), []string{"web"})
	if err != nil {
		return nil, nil, []error{err}
	}
	c, errs := Decode(s.DriverConfig, target)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	acts := map[string]driver.Action{}
	for _, a := range s.Actions {
		ca, es := c.Compile(a)
		errs = append(errs, es...)
		acts[a.Name] = ca
	}
	errs = append(errs, c.CheckPlan(s.Users, s.Closed.Iterations)...)
	return c, acts, errs
}

func open(t *testing.T, c *Config, id, users int) *browser {
	t.Helper()
	s, err := c.Open(context.Background(), driver.User{ID: id, Users: users, Seed: uint64(id) + 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, ok := s.(*browser)
	if !ok {
		t.Fatalf("session %T, want a dynamic user", s)
	}
	return b
}

const shopJourney = `
users: 2
closed: {iterations: 1}
web: {cookies: %s}
journeys:
  - name: buy
    steps:
      - name: login
        method: POST
        path: /shop/login
        headers: {Content-Type: application/x-www-form-urlencoded}
        body: user=user{{ .user }}&password=demo
        extract:
          csrf: {html: 'form#checkout input[name=csrf]'}
          sid: {cookie: shop_session}
        checks: [{name: welcome, contains: "Welcome, user{{ .user }}"}]
      - name: cart
        method: POST
        path: /shop/cart
        headers: {Content-Type: application/x-www-form-urlencoded}
        body: id=3
        checks: [{name: one-item, json: $.items, equals: "1"}]
      - name: pay-without-token
        method: POST
        path: /shop/checkout
        status: 403
        checks: [{name: refused, json: $.error, equals: csrf}]
      - name: pay
        method: POST
        path: /shop/checkout
        headers: {Content-Type: application/x-www-form-urlencoded, X-Sid: "{{ .sid }}"}
        body: csrf={{ .csrf }}
        extract: {order: {regex: '"order":"(o-[0-9]+)"'}}
        checks: [{name: ordered, json: $.items, equals: "1"}]
`

// The shop's journey needs the cookie jar, the redirect after the log-in,
// the token extracted from the account page's form: it goes through with
// cookies, and without them the log-in's redirect lands on a page that
// asks to log in.
func TestShopJourney(t *testing.T) {
	url := embedded(t)
	// A check's text is not a template: "Welcome, user{{ .user }}" is
	// looked for as written, so check the user's name by extract instead.
	src := strings.Replace(shopJourney, `checks: [{name: welcome, contains: "Welcome, user{{ .user }}"}]`, `checks: [{name: welcome, contains: "Welcome, user"}]`, 1)
	c, acts, sink := journeyOf(t, url, fmt.Sprintf(src, "true"))
	b := open(t, c, 0, 2)
	b.Begin()
	for _, step := range []string{"login", "cart", "pay-without-token", "pay"} {
		out, err := b.Do(context.Background(), acts[step])
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if out.BytesIn == 0 || out.BytesOut == 0 {
			t.Errorf("%s: bytes in %d out %d", step, out.BytesIn, out.BytesOut)
		}
	}
	if tok, _ := b.vars["csrf"].(string); len(tok) != 32 {
		t.Errorf("csrf %q, want the form's 32 hex digits", tok)
	}
	if o, _ := b.vars["order"].(string); !strings.HasPrefix(o, "o-") {
		t.Errorf("order %q", o)
	}
	if sid, _ := b.vars["sid"].(string); len(sid) != 32 {
		t.Errorf("session cookie %q", sid)
	}
	for _, want := range []string{"redirect/ok", "check:welcome/ok", "check:one-item/ok", "check:refused/ok", "check:ordered/ok"} {
		if sink.n[want] != 1 {
			t.Errorf("%s: %d, want 1 (%v)", want, sink.n[want], sink.n)
		}
	}

	// Without cookies the account page after the log-in asks to log in:
	// status 401 fails the step.
	c2, acts2, _ := journeyOf(t, url, fmt.Sprintf(src, "false"))
	b2 := open(t, c2, 1, 2)
	b2.Begin()
	_, err := b2.Do(context.Background(), acts2["login"])
	if driver.Classify(err) != driver.Status4xx || !strings.Contains(err.Error(), "401") {
		t.Errorf("log-in without cookies: %v, want status 401", err)
	}
}

// Redirects are followed up to the bound and counted; a loop ends at the
// bound in class redirect_loop; redirects: 0 follows none.
func TestRedirects(t *testing.T) {
	url := embedded(t)
	c, acts, sink := journeyOf(t, url, `
users: 1
closed: {iterations: 1}
web: {redirects: 3}
actions:
  - {name: old, path: /shop/old, checks: [{name: home, contains: Demo shop}]}
  - {name: loop, path: /shop/loop}
`)
	b := open(t, c, 0, 1)
	if _, err := b.Do(context.Background(), acts["old"]); err != nil {
		t.Fatal(err)
	}
	_, err := b.Do(context.Background(), acts["loop"])
	if driver.Classify(err) != driver.RedirectLoop || !strings.Contains(err.Error(), "more than 3 redirects: /shop/loop -> /shop/loop2 -> /shop/loop") {
		t.Errorf("loop: %v (class %s), want redirect_loop", err, driver.Classify(err))
	}
	// 1 for old, 3 followed in the loop before the bound.
	if sink.n["redirect/ok"] != 4 {
		t.Errorf("redirects counted %d, want 4", sink.n["redirect/ok"])
	}
	c0, acts0, _ := journeyOf(t, url, "users: 1\nclosed: {iterations: 1}\nweb: {redirects: 0, cookies: true}\nactions: [{name: old, path: /shop/old, status: 301}]\n")
	if _, err := open(t, c0, 0, 1).Do(context.Background(), acts0["old"]); err != nil {
		t.Errorf("redirects 0: %v, want the 301 itself", err)
	}
}

// A missing value fails the step in class check, naming the extractor;
// a default stands in for it; a failed check names the check and counts
// in its row; an unexpected status is its class.
func TestExtractAndCheckFailures(t *testing.T) {
	url := embedded(t)
	c, acts, sink := journeyOf(t, url, `
users: 1
closed: {iterations: 1}
journeys:
  - name: j
    steps:
      - name: missing
        path: /shop/products
        extract: {name: {json: '$.products[99].name'}}
      - name: defaulted
        path: /shop/products
        extract:
          name: {json: '$.products[99].name', default: none}
          first: {json: '$.products[0].name'}
          ctype: {header: content-type}
      - name: bad-check
        path: /shop/search?q={{ .first | urlquery }}
        checks:
          - {name: has-blue, contains: blue}
          - {name: no-error, not_contains: error}
      - name: wrong-status
        path: /shop/products
        status: [201, 202]
      - name: not-found
        path: /shop/nothing
`)
	b := open(t, c, 0, 1)
	b.Begin()
	_, err := b.Do(context.Background(), acts["missing"])
	if driver.Classify(err) != driver.Check || !strings.Contains(err.Error(), "extractor name (json $.products[99].name) found nothing") {
		t.Errorf("missing: %v", err)
	}
	if _, err := b.Do(context.Background(), acts["defaulted"]); err != nil || b.vars["name"] != "none" || b.vars["first"] != "red mug" || b.vars["ctype"] != "application/json" {
		t.Errorf("defaulted: %v, vars %v", err, b.vars)
	}
	_, err = b.Do(context.Background(), acts["bad-check"])
	if driver.Classify(err) != driver.Check || !strings.Contains(err.Error(), `check has-blue: body does not pass contains "blue"`) {
		t.Errorf("bad-check: %v", err)
	}
	if sink.n["check:has-blue/check"] != 1 || sink.n["check:no-error/ok"] != 1 {
		t.Errorf("check rows %v", sink.n)
	}
	_, err = b.Do(context.Background(), acts["wrong-status"])
	if driver.Classify(err) != driver.Check || !strings.Contains(err.Error(), "status 200, want 201 or 202") {
		t.Errorf("wrong-status: %v", err)
	}
	_, err = b.Do(context.Background(), acts["not-found"])
	if driver.Classify(err) != driver.Status4xx {
		t.Errorf("not-found: %v", err)
	}
}

// Templates: the user's number, its seeded stream (the same for the same
// seed, another for another user), an id no other request gets, the
// iteration; the while condition reads the user's variables.
func TestTemplates(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.RequestURI()+" "+r.Header.Get("X-U"))
		mu.Unlock()
		fmt.Fprint(w, `{"next": ""}`)
	}))
	defer srv.Close()
	src := `
users: 3
closed: {iterations: 1}
web: {vars: {site: shop}}
journeys:
  - name: j
    steps:
      - name: a
        path: /{{ .site }}/u{{ .user }}/of{{ .users }}/i{{ .iteration }}?r={{ .rand.Int 1 1000000 }}
        headers: {X-U: "{{ .unique }}"}
        extract: {next: {json: $.next}}
      - name: b
        path: /again
        while: '{{ .next }}'
`
	run := func(id int) []string {
		got = nil
		c, acts, _ := journeyOf(t, srv.URL, src)
		b := open(t, c, id, 3)
		b.Begin()
		for range 2 {
			if _, err := b.Do(context.Background(), acts["a"]); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := b.Holds(acts["b"]); ok || err != nil {
			t.Errorf("while with next empty: %v %v, want false", ok, err)
		}
		b.vars["next"] = "/p2"
		if ok, err := b.Holds(acts["b"]); !ok || err != nil {
			t.Errorf("while with next set: %v %v, want true", ok, err)
		}
		return append([]string(nil), got...)
	}
	u1, again, u2 := run(1), run(1), run(2)
	if !strings.HasPrefix(u1[0], "/shop/u2/of3/i1?r=") || !strings.HasSuffix(u1[0], " u2-1") || !strings.HasSuffix(u1[1], " u2-2") {
		t.Errorf("user 1 sent %q", u1)
	}
	if u1[0] == u1[1] || strings.Join(u1, ",") != strings.Join(again, ",") {
		t.Errorf("the same user and seed sent %q then %q: want the same stream, another number each time", u1, again)
	}
	if u2[0] == u1[0] {
		t.Errorf("users 1 and 2 sent the same %q", u1[0])
	}
}

// Each bad input is refused before the run, at its place in the file.
func TestDynamicBadInput(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "users.csv")
	os.WriteFile(csvPath, []byte("user,password\nu1,p1\nu2,p2,extra\n"), 0o644)
	short := filepath.Join(dir, "short.csv")
	os.WriteFile(short, []byte("login\nu1\nu2\n"), 0o644)
	badJSONL := filepath.Join(dir, "rows.jsonl")
	os.WriteFile(badJSONL, []byte("{\"q\": \"a\"}\n{\"q\": \"b\"}\nnot json\n"), 0o644)
	for _, tc := range []struct{ src, want string }{
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {name: a, path: '/x/{{ .token }}'}\n",
			"t.yaml:6:32: journeys[0].steps[0].path: path: {{ .token }} is not defined here"},
		// A value extracted by a later step is not defined before it.
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - name: a\n        path: /\n        body: 'x={{ .tok }}'\n      - name: b\n        path: /\n        extract: {tok: {header: X}}\n",
			"t.yaml:8:21: journeys[0].steps[0].body: body: {{ .tok }} is not defined here"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {name: a, path: /, while: '{{ .more }}'}\n",
			"t.yaml:6:39: journeys[0].steps[0].while: while: {{ .more }} is not defined here"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {name: a, path: '/{{ .rand.Foo }}'}\n",
			".rand takes a method"},
		{"users: 1\nclosed: {iterations: 1}\njourneys:\n  - name: j\n    steps:\n      - {name: a, path: '/{{ .x '}\n",
			"t.yaml:6:27: journeys[0].steps[0].path: path: unclosed action"},
		{"users: 1\nclosed: {iterations: 1}\nactions:\n  - {path: /, extract: {t: {json: '$[', header: X}}}\n",
			"extractor t: give one source"},
		{"users: 1\nclosed: {iterations: 1}\nactions:\n  - {path: /, extract: {t: {json: '$['}}}\n",
			"extractor t: JSONPath"},
		{"users: 1\nclosed: {iterations: 1}\nactions:\n  - {path: /, extract: {t: {regex: '(a'}}}\n",
			"extractor t: error parsing regexp"},
		{"users: 1\nclosed: {iterations: 1}\nactions:\n  - {path: /, checks: [{contains: a, matches: b}]}\n",
			"check action1#1: give one of contains"},
		{"users: 1\nclosed: {iterations: 1}\nactions:\n  - {path: /, status: 999}\n",
			"status 999 is not between 100 and 599"},
		{"users: 1\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: " + csvPath + "}]}\nactions: [{path: /}]\n",
			"users.csv:3: a row with the wrong number of fields"},
		{"users: 1\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: " + filepath.Join(dir, "none.csv") + "}]}\nactions: [{path: /}]\n",
			"none.csv: no such file or directory"},
		{"users: 3\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: " + short + "}]}\nactions: [{path: /}]\n",
			"t.yaml:3:16: web.feeds[0]: feed f has 2 rows, the plan needs 3, one per user (3 users)"},
		{"users: 2\nclosed: {iterations: 2}\nweb: {feeds: [{name: f, file: " + short + ", order: unique}]}\nactions: [{path: /}]\n",
			"feed f has 2 rows, the plan needs 4, one per iteration (2 users x 2 iterations)"},
		// A unique feed shorter than the users, in a run bounded by time
		// and in the open model (no iteration count): refused too.
		{"users: 3\nphases: {steady: 10s}\nweb: {feeds: [{name: f, file: " + short + ", order: unique}]}\nactions: [{path: /}]\n",
			"feed f has 2 rows, the plan needs 3, one per user's first iteration (3 users)"},
		{"users: 3\nmodel: open\nopen: {rate: 10/s}\nphases: {steady: 10s}\nweb: {feeds: [{name: f, file: " + short + ", order: unique}]}\nactions: [{path: /}]\n",
			"feed f has 2 rows, the plan needs 3, one per user's first iteration (3 users)"},
		{"users: 1\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: " + badJSONL + "}]}\nactions: [{path: /}]\n",
			"rows.jsonl:3: not a JSON object on one line"},
		{"users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2}\nactions: [{path: /}]\n",
			"protocol h2 is HTTP/2 over TLS: the target must be https://"},
		{"users: 1\nclosed: {iterations: 1}\nweb: {streams: 4}\nactions: [{path: /}]\n",
			"streams is an HTTP/2 setting"},
	} {
		_, _, errs := compileAll("http://127.0.0.1:1", tc.src)
		text := fmt.Sprint(errs)
		if len(errs) == 0 || !strings.Contains(text, tc.want) {
			t.Errorf("%s\n got %v\nwant %s", tc.src, text, tc.want)
		}
	}
	// As many rows as users is enough when the iterations are not counted.
	for _, model := range []string{"phases: {steady: 10s}", "model: open\nopen: {rate: 10/s}\nphases: {steady: 10s}"} {
		if _, _, errs := compileAll("http://127.0.0.1:1", "users: 2\n"+model+"\nweb: {feeds: [{name: f, file: "+short+", order: unique}]}\nactions: [{path: /}]\n"); len(errs) > 0 {
			t.Errorf("%s: 2 rows for 2 users: %v", model, errs)
		}
	}
	// reuse: a file shorter than the users is declared enough.
	if _, _, errs := compileAll("http://127.0.0.1:1", "users: 3\nclosed: {iterations: 1}\nweb: {feeds: [{name: f, file: "+short+", reuse: true}]}\nactions: [{path: /}]\n"); len(errs) > 0 {
		t.Errorf("reuse: %v", errs)
	}
}

// Feeds give rows by user and iteration as their order says, from a file
// read once.
func TestFeedOrders(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rows.csv")
	var b strings.Builder
	b.WriteString("n,word\n")
	for i := range 10 {
		fmt.Fprintf(&b, "%d,\"w,%d\"\n", i, i) // a quoted comma
	}
	os.WriteFile(path, []byte(b.String()), 0o644)
	for _, tc := range []struct {
		order string
		want  func(user, it int) int // the row of user's iteration it (from 0)
	}{
		{OrderPerUser, func(u, _ int) int { return u }},
		{OrderUnique, func(u, it int) int { return it*3 + u }},
		{OrderRoundRobin, func(u, it int) int { return (it*3 + u) % 10 }},
	} {
		c, acts, _ := journeyOf(t, "http://127.0.0.1:1", fmt.Sprintf("users: 3\nclosed: {iterations: 3}\nweb: {feeds: [{name: f, file: %s, order: %s}]}\njourneys: [{name: j, steps: [{name: a, path: '/{{ .n }}'}]}]\n", path, tc.order))
		_ = acts
		for u := range 3 {
			br := open(t, c, u, 3)
			for it := range 4 {
				br.Begin()
				if tc.order == OrderUnique && it*3+u >= 10 {
					if br.feedErr == nil {
						t.Errorf("unique: user %d iteration %d has a row past the 10", u, it)
					}
					br.feedErr = nil
					continue
				}
				want := tc.want(u, it)
				if br.vars["n"] != fmt.Sprint(want) || br.vars["word"] != fmt.Sprintf("w,%d", want) {
					t.Errorf("%s: user %d iteration %d got row %v %v, want %d", tc.order, u, it, br.vars["n"], br.vars["word"], want)
				}
			}
		}
	}
}

// A plain action in a mix that another action makes dynamic is done by
// the dynamic users as a step: the same request, with their cookies.
func TestMixedPlainAndDynamic(t *testing.T) {
	url := embedded(t)
	c, acts, sink := journeyOf(t, url, `
users: 1
closed: {iterations: 1}
actions:
  - {name: plain, path: /one.html}
  - {name: checked, path: /shop/products, checks: [{name: json, header: Content-Type, contains: json}]}
`)
	if _, static := acts["plain"].(*action); !static {
		t.Fatalf("plain compiled as %T", acts["plain"])
	}
	b := open(t, c, 0, 1)
	for _, n := range []string{"plain", "checked"} {
		if out, err := b.Do(context.Background(), acts[n]); err != nil || out.BytesIn == 0 {
			t.Errorf("%s: %v (%d bytes in)", n, err, out.BytesIn)
		}
	}
	if sink.n["check:json/ok"] != 1 {
		t.Errorf("checks %v", sink.n)
	}
}
