package mail

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	mailtarget "github.com/throng-io/throng/internal/targets/mail"
)

// load decodes a scenario's mail block and actions for target.
func load(t testing.TB, src, target string) (*Config, map[string]driver.Action) {
	t.Helper()
	s, err := scenario.Parse("test.yaml", []byte(src), []string{"web", Name})
	if err != nil {
		t.Fatal(err)
	}
	c, errs := Decode(s.DriverConfig, target)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c.SetLog(func(string) {})
	t.Cleanup(c.closeSMTP) // outside the engine, nobody calls Drain
	acts := map[string]driver.Action{}
	for _, a := range s.Actions {
		ca, errs := c.Compile(a)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		acts[a.Name] = ca
	}
	return c, acts
}

// events records the driver's events.
type events struct {
	mu      sync.Mutex
	byClass [driver.NumClasses]int
	byEvent [3]int  // deliver, misdeliver, duplicate
	logons  []evRec // the log-on events, kept apart from the deliveries' figures
	lat     []time.Duration
	msgs    []string
	log     []evRec // every event
	bytes   int64   // received
	sent    int64
}

// evRec is one event as the sink saw it.
type evRec struct {
	ev    int
	class driver.Class
	cause time.Time
	lat   time.Duration
}

func (e *events) Event(ev int, cause time.Time, lat time.Duration, in, out int64, c driver.Class, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev == evLogon {
		e.logons = append(e.logons, evRec{ev, c, cause, lat})
		return
	}
	e.byClass[c]++
	e.byEvent[ev]++
	e.log = append(e.log, evRec{ev, c, cause, lat})
	e.bytes += in
	e.sent += out
	if lat >= 0 {
		e.lat = append(e.lat, lat)
	}
	if err != nil {
		e.msgs = append(e.msgs, err.Error())
	}
}

func (e *events) count(c driver.Class) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byClass[c]
}

func (e *events) timed() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.lat)
}

// prepare runs Prepare for users 0..n-1.
func prepare(t testing.TB, c *Config, n int, seed uint64) {
	t.Helper()
	users := make([]int, n)
	for i := range users {
		users[i] = i
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Prepare(ctx, driver.Population{TotalUsers: n, Users: users, Seed: seed}); err != nil {
		t.Fatal(err)
	}
}

// open logs users 0..n-1 on.
func open(t testing.TB, c *Config, n int) []driver.Session {
	t.Helper()
	var ss []driver.Session
	for i := range n {
		s, err := c.Open(context.Background(), driver.User{ID: i, Users: n, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
		t.Cleanup(func() { s.Close() })
	}
	return ss
}

func startAt(addr string) (*mailtarget.Server, error) { return mailtarget.Start(addr) }
