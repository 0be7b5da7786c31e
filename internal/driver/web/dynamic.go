package web

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// Protocols of the web block.
const (
	HTTP1 = "http1"
	H2    = "h2"
	H2C   = "h2c"
)

// DefaultRedirects is how many redirects a request follows by default.
const DefaultRedirects = 10

// DefaultMaxBody bounds the body kept for checks and extractors.
const DefaultMaxBody = 16 << 20

// EventRedirect names the row counting the redirects followed.
const EventRedirect = "redirect"

// dynamic is what a Config knows of its dynamic users: whether the run is
// dynamic, the data feeds, the variables each place may use, the checks
// (each a row), and the connections users share.
type dynamic struct {
	on        bool // every action is a step (by the settings, or a step compiled)
	bySetting bool // the settings alone ask for it
	redirects int
	cookies   bool
	maxBody   int
	feeds     []*feed
	base      map[string]bool // variables defined everywhere: built-ins, vars, feed columns
	// defined are the variables the steps compiled so far extract, by
	// journey ("" for the actions of a mix).
	defined map[string]map[string]bool
	checks  []string // the check rows' names, in order
	steps   int      // steps compiled

	sinkMu sync.Mutex
	sink   driver.Sink

	open       atomic.Int64 // browsers open: the last to close closes the idle connections
	poolMu     sync.Mutex
	transports map[int]*http.Transport // by connection group (HTTP/2: users / streams)
	negotiated string                  // the protocol the preflight saw
}

// decodeDynamic reads and checks the dynamic settings and loads the feeds.
func (c *Config) decodeDynamic() []error {
	var errs []error
	d := &c.dyn
	d.redirects, d.cookies, d.maxBody = DefaultRedirects, true, DefaultMaxBody
	if c.Redirects != nil {
		d.redirects = *c.Redirects
		if d.redirects < 0 || d.redirects > 100 {
			errs = append(errs, c.block.Errorf("redirects", "redirects %d is not between 0 and 100", d.redirects))
		}
		d.bySetting = d.bySetting || d.redirects > 0
	}
	if c.Cookies != nil {
		d.cookies = *c.Cookies
		d.bySetting = d.bySetting || d.cookies
	}
	if c.MaxBody > 0 {
		d.maxBody = int(min(c.MaxBody, 1<<30))
	}
	switch c.Protocol {
	case "", HTTP1:
		c.Protocol = HTTP1
		if c.Streams > 1 {
			errs = append(errs, c.block.Errorf("streams", "streams is an HTTP/2 setting: HTTP/1.1 carries one request at a time per connection (protocol: h2 or h2c)"))
		}
	case H2:
		if !c.tls {
			errs = append(errs, c.block.Errorf("protocol", "protocol h2 is HTTP/2 over TLS: the target must be https:// (h2c is HTTP/2 without TLS)"))
		}
	case H2C:
		if c.tls {
			errs = append(errs, c.block.Errorf("protocol", "protocol h2c is HTTP/2 without TLS: the target must be http:// (h2 is HTTP/2 over TLS)"))
		}
	default:
		errs = append(errs, c.block.Errorf("protocol", "protocol %q is not http1, h2 or h2c", c.Protocol))
	}
	if c.Streams < 0 || c.Streams > 10000 {
		errs = append(errs, c.block.Errorf("streams", "streams %d is not between 1 and 10000", c.Streams))
	}
	c.Streams = max(c.Streams, 1)
	d.base = map[string]bool{}
	for _, b := range builtinVars {
		d.base[b] = true
	}
	for k := range c.Vars {
		switch {
		case !validName(k):
			errs = append(errs, c.block.Errorf("vars", "variable name %q: letters, digits and _, starting with a letter", k))
		case contains(builtinVars, k):
			errs = append(errs, c.block.Errorf("vars", "%q is a built-in variable", k))
		}
		d.base[k] = true
		d.bySetting = true
	}
	feeds, ferrs := loadFeeds(c.block)
	errs = append(errs, ferrs...)
	d.feeds = feeds
	for _, f := range feeds {
		d.bySetting = true
		for _, col := range f.columns {
			if c.Vars[col] != "" {
				errs = append(errs, f.node.Errorf("", "feed %s: column %q is also one of the vars", f.name, col))
			}
			d.base[col] = true
		}
	}
	d.on = d.bySetting
	d.defined = map[string]map[string]bool{}
	return errs
}

// needsStep reports whether action a is done by a dynamic user: the
// settings say so, or the action has something only such users do.
func (c *Config) needsStep(a scenario.Action, p *Params) bool {
	if c.dyn.bySetting || a.Journey != "" || a.While != "" || !p.Extract.IsZero() || !p.Checks.IsZero() || !p.Status.IsZero() {
		return true
	}
	if strings.Contains(p.Path, "{{") || strings.Contains(p.Body, "{{") {
		return true
	}
	for _, h := range []map[string]string{c.Headers, p.Headers} {
		for _, v := range h {
			if strings.Contains(v, "{{") {
				return true
			}
		}
	}
	return false
}

// step is an action of a dynamic user: a request whose path, headers and
// body may be templates, what it extracts and what it checks.
type step struct {
	name       string
	journey    string
	method     string
	path       *text // with the target's base path
	headers    []header
	host, ua   string
	body       *text
	fixedBody  []byte // body_size
	extract    []*extractor
	checks     []*check
	status     []int // expected final statuses; nil: any 2xx or 3xx
	cond       *text // a journey step's while
	idempotent bool
	keepBody   bool // extractors or checks read the body
}

type header struct {
	name string
	v    *text
}

// Idempotent implements driver.Idempotent.
func (s *step) Idempotent() bool { return s.idempotent }

// compileStep builds a step from an action's decoded params (values as
// written: secrets not expanded yet).
func (c *Config) compileStep(a scenario.Action, p *Params) (driver.Action, []error) {
	d := &c.dyn
	d.on = true
	d.steps++
	defined := d.defined[a.Journey]
	if defined == nil {
		defined = map[string]bool{}
		d.defined[a.Journey] = defined
	}
	known := func(name string) bool { return d.base[name] || defined[name] }
	s := &step{name: a.Name, journey: a.Journey, method: p.Method, idempotent: idempotent(p.Method), host: c.host, ua: "throng/" + c.productVersion()}
	if c.UserAgent != "" {
		s.ua = c.UserAgent
	}
	var errs []error
	at := func(key string) scenario.Node {
		n, _ := a.Params.Get(key)
		return n
	}
	path := p.Path
	if base := strings.TrimSuffix(c.target.EscapedPath(), "/"); base != "" {
		path = base + path
	}
	var es []error
	if s.path, es = compileText(path, at("path"), "path", known); len(es) > 0 {
		// The base path shifts the columns: point at the value's start.
		errs = append(errs, es...)
	}
	if p.BodySize > 0 {
		s.fixedBody = fillBody(int(p.BodySize))
	} else if p.Body != "" {
		s.body, es = compileText(p.Body, at("body"), "body", known)
		errs = append(errs, es...)
	}
	merged := map[string]header{}
	for _, set := range []struct {
		h     map[string]string
		block scenario.Node
	}{{c.Headers, c.block}, {p.Headers, a.Params}} {
		hn, _ := set.block.Get("headers")
		for k, v := range set.h {
			vn, _ := hn.Get(k)
			t, es := compileText(v, vn, "header "+k, known)
			errs = append(errs, es...)
			merged[canonical(k)] = header{name: canonical(k), v: t}
		}
	}
	for _, k := range sortedKeys(merged) {
		h := merged[k]
		switch k {
		case "Host":
			if h.v != nil && !h.v.isTemplate() {
				s.host = h.v.lit
				continue
			}
		case "User-Agent":
			if h.v != nil && !h.v.isTemplate() {
				s.ua = h.v.lit
				continue
			}
		case "Content-Length":
			continue
		}
		s.headers = append(s.headers, h)
	}
	if a.While != "" {
		wn, _ := a.Node.Get("while")
		s.cond, es = compileText(a.While, wn, "while", known)
		errs = append(errs, es...)
	}
	if !p.Status.IsZero() {
		s.status, es = decodeStatus(p.Status)
		errs = append(errs, es...)
	}
	if !p.Checks.IsZero() {
		checks, es := compileChecks(p.Checks, a.Name)
		errs = append(errs, es...)
		for _, ch := range checks {
			if contains(d.checks, ch.name) {
				errs = append(errs, p.Checks.Errorf("", "check name %q is already used: name the checks (name: ...)", ch.name))
				continue
			}
			ch.row = len(d.checks)
			d.checks = append(d.checks, ch.name)
			s.checks = append(s.checks, ch)
			if ch.header == "" {
				s.keepBody = true
			}
		}
	}
	if !p.Extract.IsZero() {
		ex, es := compileExtract(p.Extract)
		errs = append(errs, es...)
		for _, e := range ex {
			if d.base[e.name] {
				errs = append(errs, p.Extract.Errorf(e.name, "%q is a feed column or one of the vars: extract into another name", e.name))
			}
			if e.kind != "header" && e.kind != "cookie" {
				s.keepBody = true
			}
			defined[e.name] = true
		}
		s.extract = ex
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// decodeStatus reads a status or a list of statuses.
func decodeStatus(n scenario.Node) ([]int, []error) {
	var one int
	if errs := n.Decode(&one); len(errs) == 0 {
		if one < 100 || one > 599 {
			return nil, []error{n.ErrorAt(0, "status %d is not between 100 and 599", one)}
		}
		return []int{one}, nil
	}
	var list []int
	if errs := n.Decode(&list); len(errs) > 0 {
		return nil, []error{n.ErrorAt(0, "status is a status (200) or a list of them ([200, 302])")}
	}
	for _, s := range list {
		if s < 100 || s > 599 {
			return nil, []error{n.ErrorAt(0, "status %d is not between 100 and 599", s)}
		}
	}
	return list, nil
}

// JourneySteps implements driver.Journeys.
func (c *Config) JourneySteps() bool { return true }

// EventActions implements driver.Events: the redirects followed, then one
// row per check, in the order of the steps ("check:NAME"). A static run
// has none.
func (c *Config) EventActions() []string {
	if !c.dyn.on {
		return nil
	}
	out := []string{EventRedirect}
	for _, n := range c.dyn.checks {
		out = append(out, CheckPrefix+n)
	}
	return out
}

// Observe implements driver.Events.
func (c *Config) Observe(sink driver.Sink) {
	c.dyn.sinkMu.Lock()
	c.dyn.sink = sink
	c.dyn.sinkMu.Unlock()
}

// Drain implements driver.Events: checks and redirects are recorded as
// they happen, nothing is in flight.
func (c *Config) Drain(context.Context) error { return nil }

// EventsImmediate implements driver.ImmediateEvents.
func (c *Config) EventsImmediate() bool { return true }

// CheckPlan refuses, before the run, a feed shorter than the plan needs.
func (c *Config) CheckPlan(users, iterations int) []error {
	var errs []error
	for _, f := range c.dyn.feeds {
		if err := f.checkSize(users, iterations); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Dynamic reports whether the run's users are dynamic (a net/http client
// each, with cookies and redirects) rather than sending requests built
// once.
func (c *Config) Dynamic() bool { return c.dyn.on }

func (c *Config) describeDynamic(m map[string]string) {
	if !c.dyn.on && c.Protocol == HTTP1 {
		return
	}
	m["protocol"] = c.Protocol
	if c.dyn.negotiated != "" {
		m["protocol"] = c.dyn.negotiated
	}
	if c.Protocol != HTTP1 {
		m["streams"] = fmt.Sprint(c.Streams)
	}
	if !c.dyn.on {
		// A static storm over HTTP/2: no cookies, no redirects; the
		// engine says who spoke it (an event loop, or net/http on
		// goroutines).
		return
	}
	if c.Protocol != HTTP1 {
		m["client"] = "net/http"
	} else {
		m["client"] = "lean http/1.1 (h1client)"
	}
	m["redirects"] = fmt.Sprint(c.dyn.redirects)
	m["cookies"] = fmt.Sprint(c.dyn.cookies)
	if len(c.dyn.feeds) > 0 {
		var names []string
		for _, f := range c.dyn.feeds {
			names = append(names, fmt.Sprintf("%s (%d rows, %s)", f.name, f.size(), f.order))
		}
		m["feeds"] = strings.Join(names, ", ")
	}
}
