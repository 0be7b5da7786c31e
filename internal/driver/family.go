package driver

import "github.com/throng-io/throng/internal/scenario"

// Family is one protocol family as the program wires it in: the name of
// its scenario block, how the block is decoded, and what the family offers
// beyond its Config. Each family's package builds its own (web.Family());
// cli/builtin.go lists them, and nothing else needs to know a family: the
// runner finds everything else by type assertion on the Config (Preflighter,
// CounterSources, Events, ...) and on the Target (Provisioner).
type Family struct {
	// Name is the family's scenario block ("web:") and its name in
	// messages, results and `throng serve NAME`.
	Name string
	// Decode reads the scenario's block (a zero Node when the file has
	// none) for a run against env.Target. Every problem is returned,
	// positioned where it can be; one that is not, and starts with
	// "target ", is about the target.
	Decode func(block scenario.Node, env Env) (Config, []error)
	// Events names the driver's event actions (see Events), known before a
	// block is decoded: thresholds may name them (deliver.p99).
	Events []string
	// Embedded, when set, starts the family's reference server in this
	// process, listening on listen ("127.0.0.1:0": a free port): the target
	// of `target: embedded` and of `throng serve NAME`. The server runs
	// until its Target is closed. Nil: the family has none, and a scenario
	// whose target is embedded is refused.
	Embedded func(listen string) (Target, error)
	// LocalSchemes are the URL schemes whose targets name a local path and
	// have no host (the files family's "file": file:///mnt/share).
	LocalSchemes []string
}

// Env is what a family's Decode is given besides its block.
type Env struct {
	// Target is the server the run's load goes to. An embedded server in
	// this process may offer abilities by type assertion (Provisioner).
	Target Target
	// Version is the program's version: a driver that names itself to the
	// server says it (web's default User-Agent, throng/VERSION).
	Version string
}

// Target is the server a run's load goes to.
type Target interface {
	// URL is the target as the family's Decode reads it.
	URL() string
	// Close stops a server this process started (an embedded one) and
	// releases what it holds; for a server elsewhere it does nothing.
	Close() error
}

// URLTarget is a server elsewhere, known by its URL; Close does nothing.
type URLTarget string

// URL implements Target.
func (u URLTarget) URL() string { return string(u) }

// Close implements Target: there is nothing to stop.
func (URLTarget) Close() error { return nil }

// Provisioner is an optional Target ability: a server that lets throng
// write its user database (the embedded mail server) creates the accounts
// and distribution lists a run's population needs. A real server gets
// them from its administrator, or from testenv.
type Provisioner interface {
	// Provision makes exactly these accounts exist with this password,
	// empty, and these lists (address -> member addresses).
	Provision(users []string, password string, lists map[string][]string) error
}
