package cli

import (
	bin "encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/testenv"
)

// runFiles runs throng and reads its result, whatever the exit code.
func runFiles(t *testing.T, args ...string) (int, string, *result.Run) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, append(args, "-o", out)...)
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatalf("throng %v: exit %d, no result: %v\n%s\n%s", args, code, err, stdout, stderr)
	}
	return code, stdout, run
}

// corruptOnDisk flips one byte of each file where the server keeps it:
// the size stays, so a listing cannot tell.
func corruptOnDisk(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		f.ReadAt(b, 100)
		b[0] ^= 0x5A
		if _, err := f.WriteAt(b, 100); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// filesTargets are a Samba share and a local directory, each with the
// directory where the population is kept on disk.
func filesTargets(t *testing.T) []struct{ name, target, dir string } {
	share := traversableDir(t)
	srv := testenv.Samba(t, testenv.SambaOptions{ShareDir: share})
	t.Setenv("SMB_PASSWORD", srv.Password)
	local := t.TempDir()
	return []struct{ name, target, dir string }{
		{"samba", srv.URL + "/pop", filepath.Join(share, "pop")},
		{"local", "file://localhost" + local + "/pop", filepath.Join(local, "pop")},
	}
}

// A copy with corrupt data fails the run: three files corrupted on the
// server's disk after the population was written (and kept: reuse) give
// exactly 3 errors of class corrupt and exit code 1, through the files
// family's default threshold, shown like any other. A threshold of the
// scenario on corrupt replaces the default.
func TestFilesCorruptionFailsTheRun(t *testing.T) {
	for _, tc := range filesTargets(t) {
		t.Run(tc.name, func(t *testing.T) {
			scen := smbScenario(t, 40, 1, "")
			code, stdout, run := runFiles(t, "run", scen, "--target", tc.target)
			// Against Samba, the connect default too (its user connected once).
			defaults := 1
			if strings.HasPrefix(tc.target, "smb://") {
				defaults = 2
			}
			if code != ExitOK || len(run.Thresholds) != defaults || !run.Thresholds[0].Default || !run.Thresholds[0].Pass ||
				run.Thresholds[0].Threshold != "all: corrupt == 0" || float64(run.Thresholds[0].Value) != 0 ||
				(defaults == 2 && (run.Thresholds[1].Threshold != "all: connect.errors == 0" || !run.Thresholds[1].Pass)) {
				t.Fatalf("a good copy: exit %d, thresholds %+v\n%s", code, run.Thresholds, stdout)
			}
			corruptOnDisk(t, tc.dir, "f00000003.bin", "f00000017.bin", "f00000031.bin")
			code, stdout, run = runFiles(t, "run", scen, "--target", tc.target)
			all := result.Find(run.Repetitions[0].Summaries, result.All)
			if code != ExitThresholds || all.Total.Count != 40 || all.Total.ErrorsByClass["corrupt"] != 3 || all.Total.Errors != 3 {
				t.Errorf("3 corrupt files: exit %d, %d copies, errors %v\n%s", code, all.Total.Count, all.Total.ErrorsByClass, stdout)
			}
			if o := run.Thresholds; len(o) != defaults || o[0].Pass || float64(o[0].Value) != 3 || !o[0].Default {
				t.Errorf("thresholds %+v", o)
			}
			for _, want := range []string{"FAIL  all: corrupt == 0 (default) — corrupt in the all phase is 3: not == 0",
				"(default): the files family judges every run by it", "byte 100 differs from what was written"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("the summary lacks %q:\n%s", want, stdout)
				}
			}
			// The user's own limit replaces the default; corrupt >= 0 lets
			// any count pass, still shown.
			for _, th := range []string{"all: corrupt <= 3", "corrupt >= 0"} {
				code, stdout, run = runFiles(t, "run", scen, "--target", tc.target, "--threshold", th)
				if code != ExitOK || len(run.Thresholds) != defaults || run.Thresholds[0].Default || float64(run.Thresholds[0].Value) != 3 {
					t.Errorf("--threshold %q: exit %d, thresholds %+v\n%s", th, code, run.Thresholds, stdout)
				}
			}
			code, _, run = runFiles(t, "run", scen, "--target", tc.target, "--threshold", "all: corrupt < 3")
			if code != ExitThresholds || len(run.Thresholds) != defaults || run.Thresholds[0].Pass {
				t.Errorf("corrupt < 3: exit %d, thresholds %+v", code, run.Thresholds)
			}
		})
	}
}

// Files repaired before a run are reported: a kept population with one
// file removed and one cut short on the server's disk is repaired by the
// next run's preparation, which says how many and which, in the summary
// and in the result; the copies then pass.
func TestFilesRepairedReported(t *testing.T) {
	for _, tc := range filesTargets(t) {
		t.Run(tc.name, func(t *testing.T) {
			scen := smbScenario(t, 40, 1, "")
			code, stdout, run := runFiles(t, "run", scen, "--target", tc.target)
			p := run.Repetitions[0].Preparation
			if code != ExitOK || p == nil || p.Items != 40 || p.Bytes != 40*20488 || p.Checked != 0 || p.Repaired != 0 ||
				!strings.Contains(stdout, "Data set before the run:\n  40 files written (819.5 KB in ") {
				t.Fatalf("first run: exit %d, preparation %+v\n%s", code, p, stdout)
			}
			if err := os.Remove(filepath.Join(tc.dir, "f00000005.bin")); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(tc.dir, "f00000009.bin"), 100); err != nil {
				t.Fatal(err)
			}
			code, stdout, run = runFiles(t, "run", scen, "--target", tc.target)
			p = run.Repetitions[0].Preparation
			want := []string{"f00000005.bin: missing", "f00000009.bin: 100 bytes, 20488 expected"}
			if code != ExitOK || p == nil || p.Checked != 40 || p.Repaired != 2 || p.Items != 2 || p.Bytes != 2*20488 ||
				strings.Join(p.RepairedFiles, "|") != strings.Join(want, "|") {
				t.Errorf("repair: exit %d, preparation %+v\n%s", code, p, stdout)
			}
			if !strings.Contains(stdout, "kept from an earlier run: 40 files checked by listing, 2 repaired, written again (41.0 KB in ") ||
				!strings.Contains(stdout, "f00000005.bin: missing; f00000009.bin: 100 bytes, 20488 expected.") {
				t.Errorf("the summary does not name the repairs:\n%s", stdout)
			}
			if all := result.Find(run.Repetitions[0].Summaries, result.All); all.Total.Count != 40 || all.Total.Errors != 0 {
				t.Errorf("after the repair: %d copies, errors %v", all.Total.Count, all.Total.ErrorsByClass)
			}
			code, stdout, run = runFiles(t, "run", scen, "--target", tc.target)
			if p = run.Repetitions[0].Preparation; code != ExitOK || p == nil || p.Checked != 40 || p.Repaired != 0 || p.Items != 0 ||
				!strings.Contains(stdout, "kept from an earlier run: 40 files checked by listing, none repaired.") {
				t.Errorf("nothing to repair: exit %d, preparation %+v\n%s", code, p, stdout)
			}
		})
	}
}

// writeTamperer is a TCP proxy in front of an SMB server that flips one
// byte in the data of every k-th WRITE request it forwards (sessions that
// are neither signed nor encrypted): the server stores other bytes than
// the client sent, and says nothing.
type writeTamperer struct {
	ln    net.Listener
	to    string
	every int

	mu      sync.Mutex
	writes  int
	flipped []flip
	conns   []net.Conn
}

// flip is one byte changed: in which WRITE (1-based), where in the file,
// and what the client had sent there.
type flip struct {
	write int
	off   int64
	was   byte
}

func newWriteTamperer(t *testing.T, to string, every int) *writeTamperer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &writeTamperer{ln: ln, to: to, every: every}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *writeTamperer) addr() string { return p.ln.Addr().String() }

func (p *writeTamperer) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *writeTamperer) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(c, s); c.Close(); s.Close() }()
		go func() { p.forward(s, c); c.Close(); s.Close() }()
	}
}

// forward copies the client's frames (Direct TCP: a 4-byte length, then
// one SMB2 message) to the server, tampering with every k-th WRITE.
func (p *writeTamperer) forward(dst io.Writer, src io.Reader) {
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		msg := make([]byte, bin.BigEndian.Uint32(hdr[:])&0xFFFFFF)
		if _, err := io.ReadFull(src, msg); err != nil {
			return
		}
		// SMB2 WRITE request ([MS-SMB2] 2.2.21): DataOffset at 66, Length
		// at 68, Offset at 72, from the start of the header.
		if len(msg) >= 80 && string(msg[:4]) == "\xfeSMB" && bin.LittleEndian.Uint16(msg[12:]) == 0x0009 {
			p.mu.Lock()
			p.writes++
			dataAt := int(bin.LittleEndian.Uint16(msg[66:]))
			n := int(bin.LittleEndian.Uint32(msg[68:]))
			if p.writes%p.every == 0 && n > 0 && dataAt+n <= len(msg) {
				at := dataAt + n/2
				p.flipped = append(p.flipped, flip{p.writes, int64(bin.LittleEndian.Uint64(msg[72:])) + int64(n/2), msg[at]})
				msg[at] ^= 0xFF
			}
			p.mu.Unlock()
		}
		if _, err := dst.Write(append(hdr[:], msg...)); err != nil {
			return
		}
	}
}

// Uploads are read back: a server that stores other bytes than it was
// sent (every 4th WRITE tampered with on its way to Samba) gives exactly
// that many errors of class corrupt in the event verify, the uploads
// themselves succeeding, and the run fails. verify_uploads: false does
// not read back: the same corruption then goes unseen.
func TestFilesUploadsReadBack(t *testing.T) {
	share := traversableDir(t)
	srv := testenv.Samba(t, testenv.SambaOptions{ShareDir: share})
	t.Setenv("SMB_PASSWORD", srv.Password)
	dir := t.TempDir()
	scen := func(extra string) string {
		f := filepath.Join(dir, "up"+strconv.Itoa(len(extra))+".yaml")
		os.WriteFile(f, []byte(`name: uploads
users: 1
closed: {iterations: 20}
files:
  population: {files: 5, size: 20488}
  reuse: true
`+extra+`actions:
  - {name: up, op: copy-up}
`), 0o644)
		return f
	}
	// Straight to the server (the population is written and kept).
	code, stdout, run := runFiles(t, "run", scen(""), "--target", srv.URL+"/u")
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	// The events: the read-backs and the user's one connection.
	if code != ExitOK || len(run.Meta.Events) != 2 || run.Meta.Events[0] != "verify" || run.Meta.Events[1] != "connect" || len(all.Actions) != 3 ||
		all.Actions[1].Count != 20 || all.Actions[1].Errors != 0 || all.Actions[2].Count != 1 || all.Actions[2].OK != 1 || run.Meta.Settings["signed"] != "false" || run.Meta.Settings["encrypted"] != "false" {
		t.Fatalf("straight: exit %d, events %v, actions %+v, settings %v\n%s", code, run.Meta.Events, all.Actions, run.Meta.Settings, stdout)
	}
	// Through the tamperer: writes 4, 8, 12, 16 and 20 (the run's
	// preparation writes nothing: the population is kept).
	tam := newWriteTamperer(t, srv.Addr, 4)
	target := strings.Replace(srv.URL, srv.Addr, tam.addr(), 1) + "/u"
	code, stdout, run = runFiles(t, "run", scen(""), "--target", target)
	all = result.Find(run.Repetitions[0].Summaries, result.All)
	up, verify := all.Actions[0], all.Actions[1]
	if code != ExitThresholds || up.Count != 20 || up.Errors != 0 || verify.Count != 20 || verify.ErrorsByClass["corrupt"] != 5 || verify.Errors != 5 {
		t.Errorf("tampered: exit %d, uploads %d (%d errors), read-backs %d, errors %v\n%s", code, up.Count, up.Errors, verify.Count, verify.ErrorsByClass, stdout)
	}
	if got := verify.BytesInPerS * all.DurationS; got < 20*20488*0.99 || got > 20*20488*1.01 {
		t.Errorf("%.0f bytes read back, want %d", got, 20*20488)
	}
	if o := run.Thresholds; len(o) != 2 || o[0].Pass || float64(o[0].Value) != 5 || !o[1].Pass {
		t.Errorf("thresholds %+v", o)
	}
	for _, want := range []string{"verify (events)", "20, 5 errors", "read back .throng-uploads/u0000/f0000000"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout)
		}
	}
	// The server's disk holds the tampered bytes: upload k-1 for write k.
	tam.mu.Lock()
	flips := append([]flip(nil), tam.flipped...)
	tam.mu.Unlock()
	if len(flips) != 5 {
		t.Fatalf("flipped %+v", flips)
	}
	for _, f := range flips {
		b, err := os.ReadFile(filepath.Join(share, "u", ".throng-uploads", "u0000", fmt.Sprintf("f%08d.bin", f.write-1)))
		if err != nil || len(b) != 20488 || b[f.off] != f.was^0xFF {
			t.Errorf("write %d: on disk %d bytes, byte %d, %v", f.write, len(b), f.off, err)
		}
	}
	// Not read back: the run passes, blind to the same corruption.
	code, stdout, run = runFiles(t, "run", scen("  verify_uploads: false\n"), "--target", target)
	all = result.Find(run.Repetitions[0].Summaries, result.All)
	if code != ExitOK || len(run.Meta.Events) != 1 || run.Meta.Events[0] != "connect" || all.Total.Count != 20 || run.Meta.Settings["verify_uploads"] != "false" {
		t.Errorf("verify_uploads: false: exit %d, events %v, %d uploads\n%s", code, run.Meta.Events, all.Total.Count, stdout)
	}
	tam.mu.Lock()
	if len(tam.flipped) != 10 {
		t.Errorf("the tamperer flipped %d writes in all, want 10", len(tam.flipped))
	}
	tam.mu.Unlock()
}
