package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// parse decodes a scenario with a files block and actions.
func parse(t *testing.T, files string, actions ...string) *scenario.Scenario {
	t.Helper()
	src := "users: 2\nclosed: {iterations: 10}\nfiles:\n" + files + "actions:\n"
	for _, a := range actions {
		src += "  - " + a + "\n"
	}
	s, err := scenario.Parse("t.yaml", []byte(src), []string{"web", Name})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decode is Decode of a scenario's files block; it fails the test on errors.
func decode(t *testing.T, target, files string, actions ...string) (*Config, []driver.Action) {
	t.Helper()
	s := parse(t, files, actions...)
	c, errs := Decode(s.DriverConfig, target)
	if len(errs) > 0 {
		t.Fatalf("Decode: %v", errs)
	}
	var out []driver.Action
	for _, a := range s.Actions {
		ca, errs := c.Compile(a)
		if len(errs) > 0 {
			t.Fatalf("Compile(%s): %v", a.Name, errs)
		}
		out = append(out, ca)
	}
	return c, out
}

func TestDecodeDefaults(t *testing.T) {
	t.Setenv("SMB_PASSWORD", "s3cret-pw")
	c, _ := decode(t, "smb://bob@127.0.0.1/share/dir", "  population: {files: 10}\n", "{op: copy-down}")
	if c.Dialect != "auto" || c.Signing != "auto" || c.Encryption != "auto" || c.Timeout.D() != DefaultTimeout ||
		c.Reconnect.D() != DefaultReconnect || !c.Verify || c.Reuse || c.Connections != 0 || c.WriteTo != "" {
		t.Errorf("settings %+v", c.Settings)
	}
	p := c.Population
	if p.Files != 10 || p.Size != DefaultSize || p.Distribution != Fixed || p.Parallel != DefaultParallel || p.PerUser || p.Tree.Depth != 0 {
		t.Errorf("population %+v", p)
	}
	if c.tgt.addr != "127.0.0.1:445" || c.tgt.share != "share" || c.tgt.root != "dir" || c.tgt.user != "bob" || c.password != "s3cret-pw" {
		t.Errorf("target %+v", c.tgt)
	}
	d := c.Describe()
	for k, v := range d {
		if strings.Contains(v, "s3cret") || strings.Contains(k, "password") {
			t.Errorf("Describe leaks the password: %s=%s", k, v)
		}
	}
	if d["protocol"] != "smb" || d["files"] != "10" || d["size"] != "20488" || d["copy_written"] != "discarded after the check" {
		t.Errorf("Describe %v", d)
	}
}

// Every problem in the block is reported with its position and key path.
func TestDecodeErrors(t *testing.T) {
	t.Setenv("SMB_PASSWORD", "x")
	for _, tt := range []struct {
		files string
		want  string
	}{
		{"  dialekt: 3.0\n  population: {files: 1}\n", `t.yaml:4:3: files.dialekt: unknown key "dialekt" (did you mean "dialect"?)`},
		{"  dialect: \"4.0\"\n  population: {files: 1}\n", `t.yaml:4:3: files.dialect: dialect "4.0": want auto, 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1`},
		{"  signing: maybe\n  population: {files: 1}\n", `t.yaml:4:3: files.signing: signing "maybe"`},
		{"  encryption: off\n  population: {files: 1}\n", `t.yaml:4:3: files.encryption: encryption "off"`},
		{"  password: hunter2\n  population: {files: 1}\n", `t.yaml:4:3: files.password: write where the password is read from`},
		{"  timeout: 0\n  population: {files: 1}\n", `t.yaml:4:3: files.timeout: timeout must be greater than 0`},
		{"  timeout: 30\n  population: {files: 1}\n", `t.yaml:4:12: files.timeout: duration "30" has no unit`},
		{"  connections: -1\n  population: {files: 1}\n", `t.yaml:4:3: files.connections: connections must be 0`},
		{"  reuse: yes please\n  population: {files: 1}\n", `t.yaml:4:10: files.reuse: want true or false`},
		{"  population: {size: 1KB}\n", `t.yaml:4:16: files.population.files: say how many files`},
		{"  population:\n    files: -3\n", `t.yaml:5:5: files.population.files: -3 files: want 1 to`},
		{"  population:\n    files: 3\n    distribution: normal\n", `t.yaml:6:5: files.population.distribution: "normal": want fixed, uniform or exponential`},
		{"  population:\n    files: 3\n    distribution: uniform\n    min: 10KB\n    max: 1KB\n", `files.population.max: a uniform distribution needs min < max`},
		{"  population:\n    files: 3\n    tree: {depth: 2}\n", `t.yaml:6:5: files.population.tree: give depth and width both > 0`},
		{"  population:\n    files: 3\n    tree: {depth: 5, width: 100}\n", `leaf directories is over a million`},
		{"  population:\n    files: 3\n    parallel: 0\n", `t.yaml:6:5: files.population.parallel: 0: want 1 to 64`},
		{"  population:\n    files: 3\n    size: 1GiB\n", `files.population.size: 1GiB is above the limit`},
		{"  population:\n    filez: 3\n", `t.yaml:5:5: files.population.filez: unknown key "filez" (did you mean "files"?)`},
	} {
		s := parse(t, tt.files, "{op: copy-down}")
		_, errs := Decode(s.DriverConfig, "smb://u@h/s")
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Error(), tt.want)
		}
		if !found {
			t.Errorf("files:\n%s\nerrors %v\nwant one with %q", tt.files, errs, tt.want)
		}
	}
}

func TestTargets(t *testing.T) {
	for _, tt := range []struct {
		in                              string
		addr, user, domain, share, root string
		local                           string
		err                             string
	}{
		{in: "smb://bob@fs.example:10445/bench/seed/002", addr: "fs.example:10445", user: "bob", share: "bench", root: "seed/002"},
		{in: "smb://CORP;bob@10.0.0.5/s", addr: "10.0.0.5:445", user: "bob", domain: "CORP", share: "s"},
		{in: "smb://bob@[::1]:445/s/", addr: "[::1]:445", user: "bob", share: "s"},
		{in: "file:///mnt/share/x/", local: "/mnt/share/x"},
		{in: "file://localhost/mnt/s", local: "/mnt/s"},
		{in: "smb://127.0.0.1/s", err: "name the SMB user"},
		{in: "smb://bob:pw@127.0.0.1/s", err: "holds a password"},
		{in: "smb://bob@127.0.0.1", err: "name the share"},
		{in: "smb://bob@127.0.0.1/s?x=1", err: "no query"},
		{in: "smb://bob@127.0.0.1/s/a*b", err: "cannot hold"},
		{in: "file://host/mnt", err: "names a local path"},
		{in: "file:relative", err: "absolute path"},
		{in: "http://127.0.0.1:8080", err: "the files family reads smb://"},
	} {
		got, err := parseTarget(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseTarget(%q) = %v, want error %q", tt.in, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), ":pw@") {
				t.Errorf("parseTarget(%q): the error shows the password: %v", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseTarget(%q): %v", tt.in, err)
			continue
		}
		if tt.local != "" {
			if got.smb || got.root != tt.local {
				t.Errorf("parseTarget(%q) = %+v, want local %s", tt.in, got, tt.local)
			}
			continue
		}
		if !got.smb || got.addr != tt.addr || got.user != tt.user || got.domain != tt.domain || got.share != tt.share || got.root != tt.root {
			t.Errorf("parseTarget(%q) = %+v", tt.in, got)
		}
	}
}

func TestPassword(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("from-file\n"), 0o600)
	t.Setenv("MY_SMB_PW", "from-env")
	for _, tt := range []struct{ ref, want, err string }{
		{ref: "${MY_SMB_PW}", want: "from-env"},
		{ref: "${file:" + file + "}", want: "from-file"},
		{ref: "${NO_SUCH_VAR_XYZ}", err: "the environment variable NO_SUCH_VAR_XYZ is not set"},
		{ref: "${file:/no/such/file}", err: "${file:/no/such/file}"},
		{ref: "plain", err: "never the password itself"},
	} {
		s := parse(t, "  password: \""+tt.ref+"\"\n  population: {files: 1}\n", "{op: copy-down}")
		c, errs := Decode(s.DriverConfig, "smb://u@127.0.0.1/s")
		if tt.err != "" {
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.err) || !strings.HasPrefix(errs[0].Error(), "t.yaml:4:3: files.password:") {
				t.Errorf("password %s: errors %v, want %q", tt.ref, errs, tt.err)
			}
			continue
		}
		if len(errs) > 0 || c.password != tt.want {
			t.Errorf("password %s: %q %v", tt.ref, c.password, errs)
		}
	}
	// A local target needs no password.
	t.Setenv("SMB_PASSWORD", "")
	os.Unsetenv("SMB_PASSWORD")
	s := parse(t, "  population: {files: 1}\n", "{op: copy-down}")
	if _, errs := Decode(s.DriverConfig, "file:///tmp/x"); len(errs) > 0 {
		t.Errorf("local target: %v", errs)
	}
	if _, errs := Decode(s.DriverConfig, "smb://u@h/s"); len(errs) != 1 || !strings.Contains(errs[0].Error(), "SMB_PASSWORD is not set") {
		t.Errorf("smb target without SMB_PASSWORD: %v", errs)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tt := range []struct{ action, want string }{
		{"{name: a}", "t.yaml: actions[0].op: an action needs op: one of copy-down, copy-up, scan"},
		{"{op: copy}", `t.yaml:6:6: actions[0].op: unknown op "copy"`},
		{"{op: copy-up, pick: random}", "actions[0].pick: op copy-up takes no pick"},
		{"{op: copy-down, bytes: 4KB}", "actions[0].bytes: op copy-down takes no bytes"},
		{"{op: stat, from: uploads}", "actions[0].from: op stat takes no from"},
		{"{op: scan, pick: last}", `actions[0].pick: pick "last": want next (in order) or random`},
		{"{op: read, bytes: 0}", "actions[0].bytes: bytes must be between 1 and"},
		{"{op: delete, from: trash}", `actions[0].from: from "trash"`},
		{"{op: delete, from: uploads, pick: random}", "a delete from uploads takes the user's oldest upload"},
		{"{op: stat, stat: false}", "actions[0].stat: op stat takes no stat"},
		{"{op: walk, path: /x}", `actions[0].path: unknown key "path"`},
	} {
		s := parse(t, "  population: {files: 1}\n", tt.action)
		c, errs := Decode(s.DriverConfig, "file:///tmp")
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		_, errs = c.Compile(s.Actions[0])
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Error(), tt.want)
		}
		if !found {
			t.Errorf("Compile(%s) = %v, want an error with %q", tt.action, errs, tt.want)
		}
	}
	c, acts := decode(t, "file:///tmp", "  population: {files: 1}\n",
		"{op: copy-down}", "{op: stat}", "{op: write}", "{op: scan, bytes: 100, pick: random}", "{op: delete, from: uploads}", "{op: walk, stat: false}")
	want := []action{
		{op: OpCopyDown, index: 0}, {op: OpStat, index: 1, random: true}, {op: OpWrite, index: 2, random: true, bytes: DefaultWriteBytes},
		{op: OpScan, index: 3, random: true, bytes: 100}, {op: OpDelete, index: 4, uploads: true}, {op: OpWalk, index: 5},
	}
	for i, a := range acts {
		got := *a.(*action)
		got.name = ""
		w := want[i]
		w.stat = w.op != OpWalk
		if got != w {
			t.Errorf("action %d: %+v, want %+v", i, got, w)
		}
	}
	if c.compiled != 6 {
		t.Errorf("compiled %d", c.compiled)
	}
}

// A target of another scheme decodes (the command line's preset check
// compiles every preset against an http placeholder) but nothing runs.
func TestOtherSchemeRefusedBeforeTheRun(t *testing.T) {
	c, _ := decode(t, "http://127.0.0.1:9", "  population: {files: 1}\n", "{op: copy-down}")
	want := "the files family reads smb://"
	if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Preflight: %v", err)
	}
	if err := c.Prepare(context.Background(), driver.Population{TotalUsers: 1}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Prepare: %v", err)
	}
	if _, err := c.Open(context.Background(), driver.User{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v", err)
	}
}
