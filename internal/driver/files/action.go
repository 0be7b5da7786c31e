package files

import (
	"fmt"
	"strings"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// The operations an action can do. Each is one whole client operation,
// timed by the engine as one action.
const (
	// OpCopyDown copies one file from the server to the client: open, read
	// it whole, close; check every byte; write the copy to write_to, if set.
	OpCopyDown = "copy-down"
	// OpCopyUp copies one file from the client to the server: create, write
	// it whole, close, into the user's upload directory.
	OpCopyUp = "copy-up"
	// OpScan reads one file (or its first `bytes`) and checks it; it never
	// writes a local copy.
	OpScan = "scan"
	// OpWalk lists one directory of the population and stats every entry
	// (stat: false lists only).
	OpWalk = "walk"
	// OpStat asks for one file's attributes.
	OpStat = "stat"
	// OpOpen opens one file and closes it, moving no data.
	OpOpen = "open"
	// OpRead reads `bytes` (default: all) of one file at a random offset,
	// checked, between an open and a close.
	OpRead = "read"
	// OpWrite writes `bytes` (default 4KiB) into one file at a random
	// offset, between an open and a close. It writes the file's own
	// content, so the population stays valid.
	OpWrite = "write"
	// OpRename renames one file and renames it back (two renames).
	OpRename = "rename"
	// OpDelete deletes one file: of the population (from: population,
	// restored by the next Prepare) or the oldest of the user's uploads.
	OpDelete = "delete"
)

var ops = []string{OpCopyDown, OpCopyUp, OpScan, OpWalk, OpStat, OpOpen, OpRead, OpWrite, OpRename, OpDelete}

// Picks: which file of the user's share of the population an action takes.
const (
	PickNext   = "next"   // the next one in order (a sweep; it wraps around)
	PickRandom = "random" // one at random (the user's own random stream)
)

// Params are an action's files keys.
type Params struct {
	Op    string         `yaml:"op"`
	Pick  *string        `yaml:"pick"`
	Bytes *scenario.Size `yaml:"bytes"`
	From  *string        `yaml:"from"`
	Stat  *bool          `yaml:"stat"`
}

// What each operation accepts, besides op; the first pick is its default.
var opKeys = map[string]struct {
	picks []string
	bytes bool
	from  bool
	stat  bool
}{
	OpCopyDown: {picks: []string{PickNext, PickRandom}},
	OpScan:     {picks: []string{PickNext, PickRandom}, bytes: true},
	OpCopyUp:   {},
	OpWalk:     {picks: []string{PickNext, PickRandom}, stat: true},
	OpStat:     {picks: []string{PickRandom, PickNext}},
	OpOpen:     {picks: []string{PickRandom, PickNext}},
	OpRead:     {picks: []string{PickRandom, PickNext}, bytes: true},
	OpWrite:    {picks: []string{PickRandom, PickNext}, bytes: true},
	OpRename:   {picks: []string{PickRandom, PickNext}},
	OpDelete:   {picks: []string{PickNext, PickRandom}, from: true},
}

// DefaultWriteBytes is what a write action writes when it does not say.
const DefaultWriteBytes = 4 << 10

// action is a compiled files action.
type action struct {
	name    string
	op      string
	index   int // the action's position: its cursor in each session
	random  bool
	bytes   int64 // 0: the whole file
	uploads bool  // delete: from the user's uploads
	stat    bool  // walk: stat each entry
}

// Compile implements driver.Config.
func (c *Config) Compile(a scenario.Action) (driver.Action, []error) {
	var p Params
	errs := a.Params.Decode(&p)
	if len(errs) > 0 {
		return nil, errs
	}
	keys, ok := opKeys[p.Op]
	if !ok {
		if p.Op == "" {
			return nil, []error{a.Params.Errorf("op", "an action needs op: one of %s", strings.Join(ops, ", "))}
		}
		return nil, []error{a.Params.Errorf("op", "unknown op %q: want one of %s", p.Op, strings.Join(ops, ", "))}
	}
	act := &action{name: a.Name, op: p.Op, stat: true}
	notFor := func(key string) error {
		return a.Params.Errorf(key, "op %s takes no %s", p.Op, key)
	}
	if p.Pick != nil {
		switch {
		case len(keys.picks) == 0:
			errs = append(errs, notFor("pick"))
		case *p.Pick != PickNext && *p.Pick != PickRandom:
			errs = append(errs, a.Params.Errorf("pick", "pick %q: want next (in order) or random", *p.Pick))
		default:
			act.random = *p.Pick == PickRandom
		}
	} else if len(keys.picks) > 0 {
		act.random = keys.picks[0] == PickRandom
	}
	if p.Bytes != nil {
		switch {
		case !keys.bytes:
			errs = append(errs, notFor("bytes"))
		case *p.Bytes <= 0 || *p.Bytes > MaxFileSize:
			errs = append(errs, a.Params.Errorf("bytes", "bytes must be between 1 and %s", sizeText(MaxFileSize)))
		default:
			act.bytes = int64(*p.Bytes)
		}
	} else if p.Op == OpWrite {
		act.bytes = DefaultWriteBytes
	}
	if p.From != nil {
		switch {
		case !keys.from:
			errs = append(errs, notFor("from"))
		case *p.From != "population" && *p.From != "uploads":
			errs = append(errs, a.Params.Errorf("from", "from %q: want population or uploads (the files this user's copy-up wrote)", *p.From))
		default:
			act.uploads = *p.From == "uploads"
		}
	}
	if act.uploads && p.Pick != nil {
		errs = append(errs, a.Params.Errorf("pick", "a delete from uploads takes the user's oldest upload; pick is for the population"))
	}
	if p.Stat != nil {
		if !keys.stat {
			errs = append(errs, notFor("stat"))
		} else {
			act.stat = *p.Stat
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.mu.Lock()
	act.index = c.compiled
	c.compiled++
	c.uploads = c.uploads || act.op == OpCopyUp
	c.writes = c.writes || act.op == OpCopyUp || act.op == OpWrite
	c.mu.Unlock()
	return act, nil
}

func (a *action) String() string { return fmt.Sprintf("%s (%s)", a.name, a.op) }
