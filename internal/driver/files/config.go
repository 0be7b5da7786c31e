// Package files is the file-server driver: SMB2/SMB3 shares (through
// github.com/cloudsoda/go-smb2) and local or mounted directories, for
// capacity studies like the SMB study (docs/studies.md: 50,000 files of
// 20,488 bytes copied from a share over one connection, timed).
//
// The family owns its data set: Prepare creates (or, with reuse, checks and
// repairs) a population of files whose names, sizes and content are pure
// functions of the scenario's seed, so every file read is verified against
// what was written and a difference is counted as corrupt. One action is one
// file operation as a client does it (open, read, close for a copy), timed
// by the engine; a session is one connection to the server, opened on the
// first action and opened again after a failure.
package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/fsroot"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/secret"
)

// A password never belongs in a scenario file, on the command line, in a
// result or in a log: files.password names where it is read from, ${NAME}
// (an environment variable) or ${file:PATH} (package secret).

// DefaultPassword is where the password is read from when the block does
// not say.
const DefaultPassword = "${SMB_PASSWORD}"

// Name is the family's name: its scenario block is "files:".
const Name = "files"

// Settings is the scenario's "files:" block.
type Settings struct {
	// Dialect pins the SMB dialect the client offers: auto (default: the
	// server picks among 2.0.2 to 3.1.1), 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1.
	Dialect string `yaml:"dialect"`
	// Signing is auto (the server decides; default) or required (the client
	// signs every message and refuses a server that does not).
	Signing string `yaml:"signing"`
	// Encryption is auto (default) or required: the server decides whether
	// a session is encrypted (Samba: smb encrypt = required); required makes
	// throng refuse to run over a session that is not.
	Encryption string `yaml:"encryption"`
	// Password says where the SMB password is read from: ${NAME} (an
	// environment variable) or ${file:PATH}. Default ${SMB_PASSWORD}.
	Password string `yaml:"password"`
	// Timeout bounds one action (a whole open, read, close), and one
	// connection's log-on. Default 30s.
	Timeout scenario.Duration `yaml:"timeout"`
	// Reconnect is how long an action waits for a server that went away
	// (a restart) to accept connections again before it fails. Default 5s.
	Reconnect scenario.Duration `yaml:"reconnect"`
	// Connections shares connections between users: user k uses connection
	// k mod Connections, so users: 8 with connections: 1 is 8 parallel
	// streams over one connection. 0 (default): one connection per user.
	Connections int `yaml:"connections"`
	// Population is the data set, decoded from PopulationBlock.
	Population      Population    `yaml:"-"`
	PopulationBlock scenario.Node `yaml:"population"`
	// Reuse keeps a population that matches the scenario from one run to
	// the next (checked by listing, repaired where needed) instead of
	// writing every file again before each repetition.
	Reuse bool `yaml:"reuse"`
	// Verify checks every byte read against what was written (default
	// true); a difference is counted in class corrupt.
	Verify bool `yaml:"verify"`
	// VerifyUploads reads back what every copy-up and write wrote, after
	// the action and outside its time, and checks it (default true): the
	// event "verify", a difference in class corrupt.
	VerifyUploads bool `yaml:"verify_uploads"`
	// WriteTo is a local directory where copy-down writes each copy (after
	// checking it). Default: none, the copy is checked and discarded.
	WriteTo string `yaml:"write_to"`
}

// Population describes the files Prepare creates.
type Population struct {
	// Files is the number of files (per user with per_user).
	Files int `yaml:"files"`
	// Size is each file's size (fixed), or the mean (exponential). Default
	// 20488, the SMB study's.
	Size scenario.Size `yaml:"size"`
	// Distribution of sizes: fixed (default), uniform (between min and
	// max) or exponential (mean size, clamped to [min, max]).
	Distribution string        `yaml:"distribution"`
	Min          scenario.Size `yaml:"min"`
	Max          scenario.Size `yaml:"max"`
	// Tree spreads the files over directories: depth levels of width
	// directories each; flat (all in one directory) when absent.
	Tree Tree `yaml:"tree"`
	// PerUser gives each user its own directory and files.
	PerUser bool `yaml:"per_user"`
	// Parallel is the number of connections that create the population.
	// Default 4.
	Parallel int `yaml:"parallel"`
}

// Tree is a directory fan-out.
type Tree struct {
	Depth int `yaml:"depth"`
	Width int `yaml:"width"`
}

// Defaults.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultReconnect = 5 * time.Second
	DefaultSize      = 20488
	DefaultParallel  = 4
	// MaxFileSize bounds a population's file size: a file is read into one
	// buffer per user.
	MaxFileSize = 256 << 20
	// MaxFiles bounds a population (per user with per_user).
	MaxFiles = 100_000_000
)

// Dialects the client can be pinned to, by their scenario names.
var dialects = map[string]uint16{"2.0.2": 0x0202, "2.1": 0x0210, "3.0": 0x0300, "3.0.2": 0x0302, "3.1.1": 0x0311}

// dialectName names a dialect revision as the scenario does.
func dialectName(d uint16) string {
	for n, v := range dialects {
		if v == d {
			return n
		}
	}
	return fmt.Sprintf("0x%04x", d)
}

// Config is a decoded "files:" block bound to its target. It implements
// driver.Config and driver.Describer.
type Config struct {
	Settings
	block    scenario.Node
	tgt      *target
	tgtErr   error // a target this family cannot serve (see Decode)
	password string
	dialect  uint16
	layout   *layout // nil until Prepare or Open knows the seed
	// local is a local target's directory, out write_to's, opened by
	// Prepare (guarded by mu).
	local, out *fsroot.Root

	mu       sync.Mutex
	compiled int         // actions compiled so far (each gets its index)
	uploads  bool        // an action writes uploads (copy-up)
	writes   bool        // an action writes (copy-up, write): read back
	sink     driver.Sink // where read-backs go (Observe)
	// testFS, in tests only, wraps what each action works on (a file
	// system that stores other bytes than it was given).
	testFS   func(fsys) fsys
	slots    map[int]*slot      // SMB connections by slot
	observed observed           // what the server negotiated, seen by Preflight
	prep     driver.Preparation // what the last Prepare wrote and repaired
}

var (
	_ driver.Config      = (*Config)(nil)
	_ driver.Describer   = (*Config)(nil)
	_ driver.Thresholder = (*Config)(nil)
	_ driver.Preflighter = (*Config)(nil)
)

// Decode reads a scenario's "files:" block (zero: defaults) for a target:
// smb://USER@HOST[:PORT]/SHARE[/DIR] or file:///PATH. Every problem is
// returned, positioned.
//
// A target of another scheme is not a decoding error: the run's Preflight
// (and Prepare) report it, before anything runs. (The command line's
// preset check compiles every preset against an http:// placeholder.)
func Decode(block scenario.Node, tgt string) (*Config, []error) {
	c := &Config{
		Settings: Settings{
			Dialect: "auto", Signing: "auto", Encryption: "auto", Password: DefaultPassword,
			Timeout: scenario.Duration(DefaultTimeout), Reconnect: scenario.Duration(DefaultReconnect), Verify: true, VerifyUploads: true,
			Population: Population{Size: DefaultSize, Distribution: Fixed, Parallel: DefaultParallel},
		},
		block: block, slots: map[int]*slot{},
	}
	errs := block.Decode(&c.Settings)
	errs = append(errs, c.PopulationBlock.Decode(&c.Population)...)
	c.tgt, c.tgtErr = parseTarget(tgt)
	if c.tgt != nil && c.tgt.smb && len(errs) == 0 && secret.IsRef(c.Password) {
		pw, err := secret.Read(c.Password, false)
		if err != nil {
			errs = append(errs, c.block.Errorf("password", "the SMB password (files.password: %s): %v", c.Password, err))
		}
		c.password = pw
	}
	return c, append(errs, c.Validate()...)
}

// Validate implements driver.Config.
func (c *Config) Validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, c.block.Errorf(key, format, args...)) }
	if d, ok := dialects[c.Dialect]; ok {
		c.dialect = d
	} else if c.Dialect != "auto" {
		bad("dialect", "dialect %q: want auto, 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1", c.Dialect)
	}
	if c.Signing != "auto" && c.Signing != "required" {
		bad("signing", "signing %q: want auto (the server decides) or required", c.Signing)
	}
	if c.Encryption != "auto" && c.Encryption != "required" {
		bad("encryption", "encryption %q: want auto (the server decides) or required (refuse a session that is not encrypted)", c.Encryption)
	}
	if !secret.IsRef(c.Password) {
		bad("password", "write where the password is read from, ${NAME} (an environment variable) or ${file:PATH}, never the password itself")
	}
	if c.Timeout <= 0 {
		bad("timeout", "timeout must be greater than 0")
	}
	if c.Reconnect < 0 {
		bad("reconnect", "reconnect must be 0 (fail at once) or more")
	}
	if c.Connections < 0 {
		bad("connections", "connections must be 0 (one per user) or more")
	}
	if c.WriteTo != "" && strings.ContainsRune(c.WriteTo, 0) {
		bad("write_to", "write_to is not a valid path")
	}
	return append(errs, c.validatePopulation()...)
}

func (c *Config) validatePopulation() []error {
	var errs []error
	p := &c.Population
	bad := func(key, format string, args ...any) {
		if c.PopulationBlock.IsZero() {
			errs = append(errs, c.block.Errorf("population", "population.%s: "+format, append([]any{key}, args...)...))
			return
		}
		errs = append(errs, c.PopulationBlock.Errorf(key, format, args...))
	}
	switch {
	case p.Files == 0:
		bad("files", "say how many files the population holds (the SMB study: 50000; per user with per_user: true)")
	case p.Files < 0 || p.Files > MaxFiles:
		bad("files", "%d files: want 1 to %d", p.Files, MaxFiles)
	}
	switch p.Distribution {
	case Fixed:
		if p.Size > MaxFileSize {
			bad("size", "%s is above the limit of %s", sizeText(int64(p.Size)), sizeText(MaxFileSize))
		}
	case Uniform:
		if p.Max <= p.Min || p.Max > MaxFileSize {
			bad("max", "a uniform distribution needs min < max <= %s (got min %s, max %s)", sizeText(MaxFileSize), sizeText(int64(p.Min)), sizeText(int64(p.Max)))
		}
	case Exponential:
		if p.Size <= 0 || (p.Max > 0 && (p.Max < p.Min || p.Max > MaxFileSize)) || p.Max == 0 && 40*p.Size > MaxFileSize {
			bad("size", "an exponential distribution needs a mean size > 0 and min <= max <= %s (a max is needed when 40 x size is above it)", sizeText(MaxFileSize))
		}
	default:
		bad("distribution", "%q: want fixed, uniform or exponential", p.Distribution)
	}
	t := p.Tree
	if t.Depth < 0 || t.Width < 0 || (t.Depth > 0) != (t.Width > 0) {
		bad("tree", "give depth and width both > 0 (a tree of depth levels of width directories), or neither (flat)")
	} else if t.Depth > 0 {
		leaves := 1.0
		for range t.Depth {
			leaves *= float64(t.Width)
		}
		if leaves > 1e6 {
			bad("tree", "%d^%d leaf directories is over a million", t.Width, t.Depth)
		}
	}
	if p.Parallel < 1 || p.Parallel > 64 {
		bad("parallel", "%d: want 1 to 64 connections", p.Parallel)
	}
	return errs
}

// Target errors: the message for a target this family cannot serve.
func (c *Config) targetError() error {
	if c.tgtErr != nil {
		return c.tgtErr
	}
	return nil
}

// DefaultThresholds implements driver.Thresholder: while content is
// checked, a run in which any of it was not what was written fails (exit
// code 1), whatever the phase. A threshold of the scenario on corrupt
// replaces it ("corrupt >= 0" lets any count pass, still shown). Against
// an SMB server, so does a run in which a user could not connect (set up
// its session, mount the share): "all: connect.errors == 0", replaced by
// a threshold of the scenario on errors.
func (c *Config) DefaultThresholds() []string {
	var ths []string
	if c.Verify || c.VerifyUploads {
		ths = append(ths, "all: corrupt == 0")
	}
	if c.tgt != nil && c.tgt.smb {
		ths = append(ths, "all: "+EventConnect+".errors == 0")
	}
	return ths
}

// Describe implements driver.Describer: the settings and, once Preflight
// has connected, what the server negotiated.
func (c *Config) Describe() map[string]string {
	d := map[string]string{
		"verify":         strconv.FormatBool(c.Verify),
		"verify_uploads": strconv.FormatBool(c.VerifyUploads),
		"reuse":          strconv.FormatBool(c.Reuse),
		"timeout":        c.Timeout.String(),
		"files":          strconv.Itoa(c.Population.Files),
		"size":           c.sizeText(),
		"tree":           "flat",
		"per_user":       strconv.FormatBool(c.Population.PerUser),
		"copy_written":   "discarded after the check",
	}
	if t := c.Population.Tree; t.Depth > 0 {
		d["tree"] = fmt.Sprintf("%d levels x %d", t.Depth, t.Width)
	}
	if c.WriteTo != "" {
		d["copy_written"] = c.WriteTo
	}
	if c.tgt == nil || !c.tgt.smb {
		d["protocol"] = "local file system"
		return d
	}
	d["protocol"] = "smb"
	d["dialect"] = c.Dialect
	d["signing"] = c.Signing
	d["encryption"] = c.Encryption
	d["connections"] = "one per user"
	if c.Connections > 0 {
		d["connections"] = strconv.Itoa(c.Connections)
	}
	c.mu.Lock()
	o := c.observed
	c.mu.Unlock()
	if o.dialect != 0 {
		d["negotiated_dialect"] = dialectName(o.dialect)
		d["signed"] = strconv.FormatBool(o.signed)
		d["encrypted"] = strconv.FormatBool(o.encrypted)
	}
	return d
}

func (c *Config) sizeText() string {
	p := c.Population
	switch p.Distribution {
	case Uniform:
		return fmt.Sprintf("uniform %s..%s", sizeText(int64(p.Min)), sizeText(int64(p.Max)))
	case Exponential:
		return fmt.Sprintf("exponential mean %s", sizeText(int64(p.Size)))
	}
	return strconv.FormatInt(int64(p.Size), 10)
}

// sizeText writes a size as a scenario would: 20488, 4KiB, 1GiB.
func sizeText(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// Preflight checks, before the run, that the target can be served: the
// share accepts the user (and the settings, like encryption: required), or
// the local directory can be used. It records what the server negotiated
// for Describe.
func (c *Config) Preflight(ctx context.Context) error {
	if err := c.targetError(); err != nil {
		return err
	}
	if c.WriteTo != "" {
		if err := os.MkdirAll(c.WriteTo, 0o755); err != nil {
			return fmt.Errorf("files.write_to: %w", err)
		}
	}
	if !c.tgt.smb {
		return checkLocalRoot(c.tgt.root)
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout.D())
	defer cancel()
	conn, err := c.dialSMB(ctx)
	if err != nil {
		return fmt.Errorf("target %s: %w", c.tgt.text, err)
	}
	defer conn.close()
	// A stat of the directory (or of the share's top): it also shows
	// whether the server signs its answers.
	dir, err := conn.fs("").statDir(ctx, c.tgt.root)
	switch {
	case err == nil && !dir:
		return fmt.Errorf("target %s: %s is a file, not a directory", c.tgt.text, c.tgt.root)
	case err != nil && !os.IsNotExist(err):
		return fmt.Errorf("target %s: %w", c.tgt.text, classify(err, "stat "+dirName(c.tgt.root)))
	}
	c.mu.Lock()
	c.observed = conn.wire.observed()
	c.mu.Unlock()
	return nil
}

// checkLocalRoot checks that a local root is a directory or can be made one.
func checkLocalRoot(root string) error {
	fi, err := os.Stat(root)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("target file://%s: it is a file, not a directory", filepath.ToSlash(root))
	case err == nil:
		return nil
	case !os.IsNotExist(err):
		return fmt.Errorf("target file://%s: %w", filepath.ToSlash(root), err)
	}
	parent := filepath.Dir(root)
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		return fmt.Errorf("target file://%s: neither it nor its parent directory %s exists", filepath.ToSlash(root), parent)
	}
	return nil
}
