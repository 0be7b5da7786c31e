package sampler

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ---- a helper process: this test binary, re-executed

const helperEnv = "THRONG_SAMPLER_TEST_HELPER"

// helperCommand returns a command that runs this test binary as the helper
// mode (see TestHelperProcess) in a process group of its own.
func helperCommand(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// TestHelperProcess is not a test: it is the body of the helper processes
// that the tests start (it returns at once in a normal run). Modes:
//
//	spin:DURATION  burn one core for DURATION, print "cpu=SECONDS" (its own
//	               user+system time), exit 0
//	pingpong:K     start an "echo" child, print "ready", wait for a line on
//	               stdin, do K one-byte round trips with the child over two
//	               pipes, print "done", wait for stdin to close, exit
//	echo           copy fd 3 to fd 4 one byte at a time until EOF
func TestHelperProcess(t *testing.T) {
	mode, arg, _ := strings.Cut(os.Getenv(helperEnv), ":")
	if mode == "" {
		return
	}
	switch mode {
	case "spin":
		d, err := time.ParseDuration(arg)
		if err != nil {
			os.Exit(2)
		}
		end := time.Now().Add(d)
		for time.Now().Before(end) {
		}
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Printf("cpu=%.6f\n", time.Duration(ru.Utime.Nano()+ru.Stime.Nano()).Seconds())
	case "echo":
		runtime.LockOSThread()
		b := make([]byte, 1)
		for {
			if n, err := syscall.Read(3, b); n != 1 || err != nil {
				break
			}
			if n, err := syscall.Write(4, b); n != 1 || err != nil {
				break
			}
		}
	case "pingpong":
		k, err := strconv.Atoi(arg)
		if err != nil || helperPingPong(k) != nil {
			os.Exit(2)
		}
	default:
		os.Exit(2)
	}
	os.Exit(0)
}

func helperPingPong(k int) error {
	var toChild, fromChild [2]int
	if err := syscall.Pipe(toChild[:]); err != nil {
		return err
	}
	if err := syscall.Pipe(fromChild[:]); err != nil {
		return err
	}
	child := helperCommand("echo")
	child.SysProcAttr = nil // stay in this group
	child.ExtraFiles = []*os.File{os.NewFile(uintptr(toChild[0]), "r"), os.NewFile(uintptr(fromChild[1]), "w")}
	if err := child.Start(); err != nil {
		return err
	}
	syscall.Close(toChild[0])
	syscall.Close(fromChild[1])
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		return err
	}
	runtime.LockOSThread()
	b := []byte{'x'}
	for range k {
		if n, err := syscall.Write(toChild[1], b); n != 1 || err != nil {
			return fmt.Errorf("write: %v", err)
		}
		if n, err := syscall.Read(fromChild[0], b); n != 1 || err != nil {
			return fmt.Errorf("read: %v", err)
		}
	}
	fmt.Println("done")
	io.Copy(io.Discard, in)
	syscall.Close(toChild[1])
	return child.Wait()
}

// started is a helper or other child process with its stdin and stdout.
type started struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func start(t *testing.T, cmd *exec.Cmd) *started {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		in.Close()
		// Kill the process and, if it leads one, its group; then reap.
		cmd.Process.Kill()
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid && cmd.ProcessState == nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	return s
}

// line reads one line (without blanks around it); bounded by 30 s.
func (s *started) line(t *testing.T) string {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		l, _ := s.out.ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("child said nothing within 30 s")
		return ""
	}
}

// expect reads one line and fails unless it is want.
func (s *started) expect(t *testing.T, want string) {
	t.Helper()
	if got := s.line(t); got != want {
		t.Fatalf("child said %q, want %q", got, want)
	}
}

// ---- fixtures

func fixtureProcess(t *testing.T, sel ProcessSelector) *process {
	t.Helper()
	if sel.PIDFile != "" {
		sel.PIDFile = filepath.Join("testdata/procs/run", sel.PIDFile)
	}
	p, err := newProcess("testdata/procs", sel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func processWants(user, system, vol, invol, minflt, majflt float64, io []float64, rssPages, vsize, threads float64, fds []float64, count float64) []want {
	w := []want{
		{"process_cpu_user_seconds_total", Counter, user / 100},
		{"process_cpu_system_seconds_total", Counter, system / 100},
		{"process_voluntary_switches_total", Counter, vol},
		{"process_involuntary_switches_total", Counter, invol},
		{"process_minor_faults_total", Counter, minflt},
		{"process_major_faults_total", Counter, majflt},
		{"process_rss_bytes", Gauge, rssPages * float64(os.Getpagesize())},
		{"process_virtual_bytes", Gauge, vsize},
		{"process_threads", Gauge, threads},
		{"process_count", Gauge, count},
		{"process_cpus", Gauge, 2}, // every fixture's Cpus_allowed_list is 0-1
	}
	if io != nil {
		w = append(w, want{"process_read_bytes_total", Counter, io[0]}, want{"process_write_bytes_total", Counter, io[1]})
	}
	if fds != nil {
		w = append(w, want{"process_fds", Gauge, fds[0]})
	}
	return w
}

// rootsOf are the process_root series of the given roots.
func rootsOf(w []want, pids ...int) []want {
	for _, pid := range pids {
		w = append(w, want{"process_root{pid=" + strconv.Itoa(pid) + "}", Gauge, 1})
	}
	return w
}

func TestProcessFixture(t *testing.T) {
	// By name: roots 100 and 101 (comm nginx); members 100 (two threads),
	// 101, 102 (a zombie: CPU and faults only) and 103 (no io, no fd).
	p := fixtureProcess(t, ProcessSelector{Name: "nginx"})
	if p.Name() != "process nginx" {
		t.Errorf("Name %q", p.Name())
	}
	for range 2 { // again with the argv0 cache filled
		checkPoints(t, points(t, p), rootsOf(processWants(
			(150+20)+300+40+1, (50+10)+100+2+1, // utime+cutime, stime+cstime
			(7+30)+100+2, (1+4)+9+0, // switches: both threads of 100
			(1000+10)+200+50+5, 5+1,
			[]float64{4096, 8192 + 100},
			1000+2000+100, 10000000+20000000+3000000, 2+1+1,
			[]float64{4 + 2}, 3), 100, 101))
	}

	// By PID: 101 and its zombie child.
	p = fixtureProcess(t, ProcessSelector{PID: 101})
	if p.Name() != "process 101" {
		t.Errorf("Name %q", p.Name())
	}
	checkPoints(t, points(t, p), rootsOf(processWants(340, 102, 100, 9, 250, 0, []float64{0, 100}, 2000, 20000000, 1, []float64{2}, 1), 101))

	// By argv[0]: 103 ("/usr/bin/renamed") and 201 ("/bin/renamed", comm
	// "we ird) name"); 103 has neither io nor fd readable.
	p = fixtureProcess(t, ProcessSelector{Name: "renamed"})
	checkPoints(t, points(t, p), rootsOf(processWants(12, 14, 2+4, 0+5, 5+7, 0, []float64{1, 2}, 100+50, 3000000+5000000, 2, []float64{1}, 2), 103, 201))

	// By comm with a space and a parenthesis.
	p = fixtureProcess(t, ProcessSelector{Name: "we ird) name"})
	checkPoints(t, points(t, p), rootsOf(processWants(11, 13, 4, 5, 7, 0, []float64{1, 2}, 50, 5000000, 1, []float64{1}, 1), 201))

	// By pid file.
	p = fixtureProcess(t, ProcessSelector{PIDFile: "srv.pid"})
	if p.Name() != "process pidfile testdata/procs/run/srv.pid" {
		t.Errorf("Name %q", p.Name())
	}
	checkPoints(t, points(t, p), rootsOf(processWants(3, 4, 1, 0, 1, 0, nil, 60, 6000000, 1, nil, 1), 300))

	// Several fields: the union (200's child 201 is counted once).
	p = fixtureProcess(t, ProcessSelector{PID: 200, Name: "we ird) name", PIDFile: "srv.pid"})
	if p.Name() != "process we ird) name 200 pidfile testdata/procs/run/srv.pid" {
		t.Errorf("Name %q", p.Name())
	}
	got := points(t, p)
	if got["process_count"].Value != 3 || got["process_cpu_user_seconds_total"].Value != (9+11+3)/100.0 {
		t.Errorf("union: count %v, user %v", got["process_count"].Value, got["process_cpu_user_seconds_total"].Value)
	}
}

// The generator (self) is never counted: not as a root matched by name,
// nor its children matched by name, nor as a member of a group it belongs
// to; chosen by PID it is refused, and so is one of its threads. A name
// that matches only the generator's processes says so (ErrGenerator). A
// process it started and that was chosen by PID (a test's server) is
// counted.
func TestProcessNeverCountsTheGenerator(t *testing.T) {
	withSelf := func(self int32, sel ProcessSelector) *process {
		p := fixtureProcess(t, sel)
		p.self = self
		return p
	}
	for _, tc := range []struct {
		self int32
		sel  ProcessSelector
		want string
	}{
		{100, ProcessSelector{Name: "nginx"}, `the only processes named "nginx" are this throng (PID 100) and its children (101)`},
		{200, ProcessSelector{Name: "we ird) name"}, `the only processes named "we ird) name" are children of this throng (PID 200) (201)`},
		{300, ProcessSelector{Name: "srv"}, `the only process named "srv" is this throng (PID 300)`},
		{100, ProcessSelector{PID: 100}, "process 100 is this throng, the load generator, not a server"},
		{100, ProcessSelector{PID: 105}, "process 105 is a thread of this throng, the load generator, not a server"},
		{300, ProcessSelector{PIDFile: "srv.pid"}, "process 300 from the pid file is this throng, the load generator, not a server"},
	} {
		p := withSelf(tc.self, tc.sel)
		_, err := tryPoints(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrGenerator) {
			t.Errorf("self %d, %+v: %v; want %q (ErrGenerator)", tc.self, tc.sel, err, tc.want)
		}
	}
	// Another process of the name is counted, the generator's child is not.
	got := points(t, withSelf(100, ProcessSelector{Name: "renamed"})) // 103 (a child of 100) and 201
	checkPoints(t, got, rootsOf(processWants(11, 13, 4, 5, 7, 0, []float64{1, 2}, 50, 5000000, 1, []float64{1}, 1), 201))
	// The generator inside the group (a child of the root) is left out, and
	// its own children with it: 100's group without 101 and its zombie 102.
	got = points(t, withSelf(101, ProcessSelector{PID: 100}))
	if got["process_count"].Value != 2 || got["process_cpu_user_seconds_total"].Value != (150+20+1)/100.0 {
		t.Errorf("group of 100 with the generator 101 inside: count %v, user %v", got["process_count"].Value, got["process_cpu_user_seconds_total"].Value)
	}
	// A child of the generator chosen by PID is the server: counted.
	got = points(t, withSelf(100, ProcessSelector{PID: 101}))
	if got["process_count"].Value != 1 || got["process_root{pid=101}"].Value != 1 {
		t.Errorf("101 chosen by PID under the generator 100: count %v", got["process_count"].Value)
	}
}

// With roots chosen by PID, processes found outside the group are not read
// again while their /proc/PID directory keeps its inode number; a process
// that reuses an outsider's PID gets a new directory and is read.
func TestProcessFixtureOutsidersSkipped(t *testing.T) {
	root := t.TempDir()
	copyTree(t, "testdata/procs", root)
	p, err := newProcess(root, ProcessSelector{PID: 100})
	if err != nil {
		t.Fatal(err)
	}
	first := points(t, p)
	outside := len(p.outside)
	if second := points(t, p); len(p.procs) != 4 || first["process_cpu_user_seconds_total"] != second["process_cpu_user_seconds_total"] {
		t.Fatalf("second sample read %d processes (want the 4 members only), user %v then %v",
			len(p.procs), first["process_cpu_user_seconds_total"], second["process_cpu_user_seconds_total"])
	}
	if outside != 5 || len(p.outside) != 5 { // 1, 200, 201, 300, 301
		t.Fatalf("%d then %d outsiders, want 5", outside, len(p.outside))
	}
	// An outsider's stat changes (unread: still outside, as it must be).
	proc := filepath.Join(root, "proc")
	os.WriteFile(filepath.Join(proc, "201/stat"), []byte("201 (x) S 1 1 1 0 -1 0 0 0 0 0 999 999 0 0 20 0 1 0 6001 1 1 0\n"), 0o644)
	// PID 200 exits and is reused by a new child of the worker 101: a new
	// directory (made before the old one goes, so its inode differs).
	fresh := filepath.Join(proc, "200.new")
	os.Mkdir(fresh, 0o755)
	os.WriteFile(filepath.Join(fresh, "stat"), []byte("200 (newkid) S 101 1 1 0 -1 0 1 0 0 0 70 30 0 0 20 0 1 0 9000 1000 10 0\n"), 0o644)
	os.WriteFile(filepath.Join(fresh, "status"), []byte("voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6\n"), 0o644)
	os.RemoveAll(filepath.Join(proc, "200"))
	if err := os.Rename(fresh, filepath.Join(proc, "200")); err != nil {
		t.Fatal(err)
	}
	got := points(t, p)
	if got["process_count"].Value != 4 || math.Abs(got["process_cpu_user_seconds_total"].Value-(first["process_cpu_user_seconds_total"].Value+0.7)) > 1e-9 {
		t.Fatalf("after PID 200 was reused by a member's child: count %v, user %v (was %v)",
			got["process_count"].Value, got["process_cpu_user_seconds_total"].Value, first["process_cpu_user_seconds_total"].Value)
	}
	// The root itself restarts under the same PID (another start time):
	// every process is read again.
	st, _ := os.ReadFile(filepath.Join(proc, "100/stat"))
	os.WriteFile(filepath.Join(proc, "100/stat"), []byte(strings.Replace(string(st), " 5000 ", " 5999 ", 1)), 0o644)
	got = points(t, p)
	if len(p.procs) != 9 || got["process_count"].Value != 4 {
		t.Fatalf("after the root restarted: %d processes read (want all 9), count %v", len(p.procs), got["process_count"].Value)
	}
}

func TestProcessFixtureErrors(t *testing.T) {
	for _, tc := range []struct {
		sel  ProcessSelector
		want string
	}{
		{ProcessSelector{PID: 999}, "process 999 is not running"},
		{ProcessSelector{PID: 102}, "process 102 is not running"}, // a zombie
		{ProcessSelector{Name: "nosuch"}, `no process is named "nosuch"`},
		{ProcessSelector{Name: "helper"}, `no process is named "helper"`}, // only a zombie has it
		{ProcessSelector{PIDFile: "gone.pid"}, "process 301 from the pid file is not running"},
		{ProcessSelector{PIDFile: "junk.pid"}, "holds no PID"},
		{ProcessSelector{PIDFile: "missing.pid"}, "no such file"},
	} {
		p := fixtureProcess(t, tc.sel)
		got, err := tryPoints(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), p.Name()+": ") {
			t.Errorf("%+v: err %v, want one with %q", tc.sel, err, tc.want)
		}
		if len(got) != 0 {
			t.Errorf("%+v: %d points with the error", tc.sel, len(got))
		}
	}
	for _, sel := range []ProcessSelector{{}, {PID: -1}} {
		if src, err := NewProcess(sel); err == nil || src != nil {
			t.Errorf("NewProcess(%+v) = %v, %v; want an error", sel, src, err)
		}
	}
	if _, err := tryPoints(&process{name: "x", procDir: cpath("/nonexistent/proc"), sem: make(chan struct{}, 1)}); err == nil {
		t.Error("no /proc: no error")
	}
}

func TestParseProcStat(t *testing.T) {
	var e procEntry
	line := "42 (a (b) c) S 7 42 42 0 -1 4194560 1 2 3 4 5 6 -7 8 20 0 9 0 10 11 12 18446744073709551615 1\n"
	if !parseProcStat([]byte(line), &e) {
		t.Fatal("parse failed")
	}
	want := procEntry{pid: 42, ppid: 7, state: 'S', minflt: 1, cminflt: 2, majflt: 3, cmajflt: 4,
		utime: 5, stime: 6, cutime: 0, cstime: 8, threads: 9, start: 10, vsize: 11, rss: 12}
	if e != want {
		t.Errorf("got %+v\nwant %+v", e, want)
	}
	for _, bad := range []string{"", "42 (x", "x (y) S 1", "42 (x) S 1 2 3", "42 (x) S y 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"} {
		if parseProcStat([]byte(bad), &e) {
			t.Errorf("parsed %q", bad)
		}
	}
}

// ---- live processes, against known loads

// (a), by PID, is in TestLiveOneCoreSpinner. (d): two processes ping-pong K
// times over pipes.
func TestLivePingPong(t *testing.T) {
	const k = 20000
	attempts(t, 2, func() error {
		h := start(t, helperCommand("pingpong:"+strconv.Itoa(k)))
		h.expect(t, "ready")
		proc, err := NewProcess(ProcessSelector{PID: h.cmd.Process.Pid})
		if err != nil {
			t.Fatal(err)
		}
		s := machineSampler(proc)
		r0 := s.Sample(t.Context())
		fmt.Fprintln(h.in, "go")
		h.expect(t, "done")
		r1 := s.Sample(t.Context())
		h.in.Close()
		ctxt := delta(t, r0, r1, "system", "context_switches_total")
		vol := delta(t, r0, r1, proc.Name(), "process_voluntary_switches_total")
		invol := delta(t, r0, r1, proc.Name(), "process_involuntary_switches_total")
		c0, c1 := value(t, r0, proc.Name(), "process_count"), value(t, r1, proc.Name(), "process_count")
		t.Logf("%d round trips: machine context switches +%.0f (%.2f per round trip), group voluntary +%.0f (%.2f), involuntary +%.0f; process_count %v, %v",
			k, ctxt, ctxt/k, vol, vol/k, invol, c0, c1)
		if c0 != 2 || c1 != 2 {
			t.Fatalf("process_count %v, %v; want 2 (the helper and its echo child)", c0, c1)
		}
		if ctxt < 1.9*k {
			return fmt.Errorf("context_switches_total rose by %.0f, want >= ~%d", ctxt, 2*k)
		}
		if vol < k {
			return fmt.Errorf("process voluntary switches rose by %.0f, want >= %d", vol, k)
		}
		return nil
	})
}

// (e) A parent that forks a CPU-burning child is read as one group, and the
// child's CPU stays counted after it exits and its parent reaps it: over the
// child's life the group's CPU rises by what the child itself reports having
// used (getrusage at its exit); each reading while it burns lies between the
// scheduler's counts for the shell and the child read just before and after
// it; and the group reads 1.0 ± 0.15 core while the child burns, when it got
// its core. The parent runs at nice -20 when the test may raise priorities
// (root), so that other load on the machine does not take the child's core.
func TestLiveProcessGroup(t *testing.T) {
	knownLoad(t, func() error {
		cmd := exec.Command("sh", "-c", `read a; "$HELPER" -test.run='^TestHelperProcess$' -test.count=1; echo done; read b`)
		cmd.Env = append(os.Environ(), "HELPER="+os.Args[0], helperEnv+"=spin:1600ms")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		h := start(t, cmd)
		boosted := boost(cmd.Process.Pid) // inherited by the child
		proc, err := NewProcess(ProcessSelector{PID: cmd.Process.Pid})
		if err != nil {
			t.Fatal(err)
		}
		s := New(5*time.Second, proc)
		name := proc.Name()
		cpu := func(r Reading) float64 {
			return value(t, r, name, "process_cpu_user_seconds_total") + value(t, r, name, "process_cpu_system_seconds_total")
		}
		r0 := s.Sample(t.Context())
		fmt.Fprintln(h.in, "go")
		time.Sleep(200 * time.Millisecond)
		// The child, for the scheduler's own count of its time (and the
		// shell's).
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		child := strings.TrimSpace(string(kids))
		if child == "" || strings.Contains(child, " ") {
			t.Fatalf("the shell's children: %q, want one", child)
		}
		sh := strconv.Itoa(cmd.Process.Pid)
		r1, b1, a1, tb1, _ := sampleBracketed(t, s, sh, child)
		time.Sleep(600 * time.Millisecond)
		r2, b2, a2, _, ta2 := sampleBracketed(t, s, sh, child)
		line := h.line(t)
		childCPU, err := strconv.ParseFloat(strings.TrimPrefix(line, "cpu="), 64)
		if err != nil {
			t.Fatalf("child said %q, want cpu=SECONDS", line)
		}
		h.expect(t, "done")
		r3 := s.Sample(t.Context())
		rate := (cpu(r2) - cpu(r1)) / r2.At.Sub(r1.At).Seconds()
		sched := (a2 - b1).Seconds() / ta2.Sub(tb1).Seconds()
		counts := []float64{value(t, r0, name, "process_count"), value(t, r1, name, "process_count"),
			value(t, r2, name, "process_count"), value(t, r3, name, "process_count")}
		total := cpu(r3) - cpu(r0)
		t.Logf("group CPU %.3f s, %.3f s, %.3f s, %.3f s: +%.3f s over the child's life, which reported %.3f s; "+
			"%.3f cores while the child burned, about %.3f by schedstat (nice -20: %v); process_count %v",
			cpu(r0), cpu(r1), cpu(r2), cpu(r3), total, childCPU, rate, sched, boosted, counts)
		if counts[0] != 1 || counts[1] != 2 || counts[2] != 2 || counts[3] != 1 {
			t.Fatalf("process_count %v, want [1 2 2 1]", counts)
		}
		// The shell's time and the child's, ticks rounded down for each.
		checkBracket(t, "reading while the child burned", cpu(r1), b1, a1, 4)
		checkBracket(t, "later reading while the child burned", cpu(r2), b2, a2, 4)
		if cpu(r3) < cpu(r2) {
			t.Fatalf("group CPU fell from %.3f to %.3f s when the child was reaped", cpu(r2), cpu(r3))
		}
		// Ticks of 10 ms on each of two readings, and the shell's own time.
		if total < childCPU-0.03 || total > childCPU+0.05 {
			t.Fatalf("group CPU rose by %.3f s; the child used %.3f s", total, childCPU)
		}
		if math.Abs(rate-1) > 0.15 {
			err := fmt.Errorf("group read as %.3f cores while its child burned one", rate)
			if sched < 0.85 {
				err = fmt.Errorf("%w: %v (it ran %.3f of a core by schedstat)", errStarved, err, sched)
			}
			return err
		}
		return nil
	})
}

// boost sets the nice value of pid to -20 and reports whether it could (it
// needs root or CAP_SYS_NICE).
func boost(pid int) bool {
	return syscall.Setpriority(syscall.PRIO_PROCESS, pid, -20) == nil
}

// (f) NewProcess by name (comm and argv[0]) and by pid file, following a
// restart, and failing once the process is dead.
func TestLiveProcessByNameAndPIDFile(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	dir := t.TempDir()
	tag := strconv.Itoa(os.Getpid() % 100000)

	// comm: exec through a symlink with a unique name; argv[0] unrelated.
	link := filepath.Join(dir, "thrcomm"+tag)
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	// Both run outside this process's tree (a server throng did not start):
	// bash starts each in the background and exits, so init adopts it.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, argv := range [][2]string{{"unrelated-argv0", link}, {"/nowhere/thrargv" + tag, sleep}} {
		out, err := exec.Command(bash, "-c", `(exec -a "$0" "$1" 30 </dev/null >/dev/null 2>&1) & echo $!`, argv[0], argv[1]).Output()
		pid, perr := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil || perr != nil {
			t.Fatalf("starting %v: %v %v", argv, err, perr)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
	for _, name := range []string{"thrcomm" + tag, "thrargv" + tag} {
		src, err := NewProcess(ProcessSelector{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]Point
		deadline := time.Now().Add(5 * time.Second)
		for got, err = tryPoints(src); err != nil && time.Now().Before(deadline); got, err = tryPoints(src) {
			time.Sleep(10 * time.Millisecond) // exec may not have happened yet
		}
		if err != nil {
			t.Fatalf("by name %q: %v", name, err)
		}
		if got["process_count"].Value != 1 || got["process_rss_bytes"].Value <= 0 || got["process_threads"].Value != 1 {
			t.Errorf("by name %q: count %v, rss %v, threads %v", name, got["process_count"].Value,
				got["process_rss_bytes"].Value, got["process_threads"].Value)
		}
		t.Logf("by name %q: %s %v processes, rss %.0f bytes, %v fds", name, src.Name(),
			got["process_count"].Value, got["process_rss_bytes"].Value, got["process_fds"].Value)
	}
	if _, err := tryPoints(mustProcess(t, ProcessSelector{Name: "thrnone" + tag})); err == nil {
		t.Error("a name nothing has: no error")
	}
	// A process this one started is the generator's own, by name: a
	// child named thrkid, found only under this process.
	kidLink := filepath.Join(dir, "thrkid"+tag)
	os.Symlink(sleep, kidLink)
	kid := exec.Command(kidLink, "30")
	start(t, kid)
	var kerr error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, kerr = tryPoints(mustProcess(t, ProcessSelector{Name: "thrkid" + tag})); errors.Is(kerr, ErrGenerator) {
			break
		}
	}
	if !errors.Is(kerr, ErrGenerator) || !strings.Contains(kerr.Error(), strconv.Itoa(kid.Process.Pid)) {
		t.Errorf("by name, a child of this process: %v; want ErrGenerator naming %d", kerr, kid.Process.Pid)
	}
	if got, err := tryPoints(mustProcess(t, ProcessSelector{PID: kid.Process.Pid})); err != nil || got["process_count"].Value != 1 {
		t.Errorf("by PID, a child of this process: %v, count %v; want it counted", err, got["process_count"].Value)
	}
	if _, err := tryPoints(mustProcess(t, ProcessSelector{PID: os.Getpid()})); !errors.Is(err, ErrGenerator) {
		t.Errorf("by PID, this process: %v", err)
	}

	// pid file, re-read at every sample.
	pidFile := filepath.Join(dir, "srv.pid")
	src := mustProcess(t, ProcessSelector{PIDFile: pidFile})
	if _, err := tryPoints(src); err == nil {
		t.Error("missing pid file: no error")
	}
	for round := range 2 { // the second round is a restart under a new PID
		c := exec.Command(sleep, "30")
		start(t, c)
		os.WriteFile(pidFile, []byte(strconv.Itoa(c.Process.Pid)+"\n"), 0o644)
		got, err := tryPoints(src)
		if err != nil || got["process_count"].Value != 1 {
			t.Fatalf("round %d: pid file with running pid %d: err %v, count %v", round, c.Process.Pid, err, got["process_count"].Value)
		}
		c.Process.Kill()
		c.Wait()
		_, err = tryPoints(src)
		if err == nil || !strings.Contains(err.Error(), "is not running") {
			t.Fatalf("round %d: pid file naming dead pid %d: err %v", round, c.Process.Pid, err)
		}
		t.Logf("round %d: pid %d dead: %v", round, c.Process.Pid, err)
	}
}

func mustProcess(t *testing.T, sel ProcessSelector) Source {
	t.Helper()
	src, err := NewProcess(sel)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// The generator source reads this very process: a known CPU burn, known
// open files and known touched memory.
func TestLiveGenerator(t *testing.T) {
	g := NewGenerator()
	if g.Name() != "generator" {
		t.Errorf("Name %q", g.Name())
	}
	knownLoad(t, func() error {
		// Spin on this thread at nice -20 where allowed, so that other load
		// on the machine does not take the core.
		runtime.LockOSThread()
		tid := syscall.Gettid()
		task := fmt.Sprintf("%d/task/%d", os.Getpid(), tid)
		boost(tid)
		a := points(t, g)
		run0 := schedRun(t, task)
		end := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(end) {
		}
		run1 := schedRun(t, task)
		b := points(t, g)
		syscall.Setpriority(syscall.PRIO_PROCESS, tid, 0)
		runtime.UnlockOSThread()
		cpu := func(m map[string]Point) float64 {
			return m["process_cpu_user_seconds_total"].Value + m["process_cpu_system_seconds_total"].Value
		}
		d, sched := cpu(b)-cpu(a), (run1 - run0).Seconds()
		t.Logf("spinning 0.5 s: generator CPU +%.3f s; the spinning thread ran %.3f s by its schedstat", d, sched)
		// The other threads of the test binary add a little.
		if d < sched-0.01 || d > sched+0.2 {
			t.Fatalf("generator CPU rose by %.3f s, the spinning thread alone ran %.3f s", d, sched)
		}
		if d < 0.45 || d > 0.75 {
			err := fmt.Errorf("spinning 0.5 s raised the generator's CPU by %.3f s", d)
			if sched < 0.45 {
				err = fmt.Errorf("%w: %v", errStarved, err)
			}
			return err
		}
		return nil
	})

	a := points(t, g)
	var files []*os.File
	for range 10 {
		f, err := os.Open(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// 64 MiB outside the Go heap (which may hold freed memory from an
	// earlier test), in 4 KiB pages: one minor fault per page touched.
	mem, err := syscall.Mmap(-1, 0, 64<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	b := points(t, g)
	for _, f := range files {
		f.Close()
	}
	fds := b["process_fds"].Value - a["process_fds"].Value
	rss := b["process_rss_bytes"].Value - a["process_rss_bytes"].Value
	faults := b["process_minor_faults_total"].Value - a["process_minor_faults_total"].Value
	t.Logf("10 files opened: fds +%.0f; 64 MiB touched: rss +%.1f MiB, minor faults +%.0f; count %v, threads %v",
		fds, rss/(1<<20), faults, b["process_count"].Value, b["process_threads"].Value)
	if fds != 10 {
		t.Errorf("process_fds rose by %v, want 10", fds)
	}
	if rss < 60<<20 {
		t.Errorf("process_rss_bytes rose by %.0f, want >= 60 MiB", rss)
	}
	if faults < (64<<20)/4096 {
		t.Errorf("minor faults rose by %v, want >= %d (one per 4 KiB page touched)", faults, (64<<20)/4096)
	}
	if b["process_count"].Value != 1 || b["process_threads"].Value < 1 {
		t.Errorf("count %v, threads %v", b["process_count"].Value, b["process_threads"].Value)
	}
}

// ---- benchmarks

func BenchmarkProcessSample(b *testing.B) {
	// The group of this test binary's parent (go test, or a shell): a
	// real-sized scan of /proc with one small group.
	src, err := NewProcess(ProcessSelector{PID: os.Getpid()})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkSource(b, src)
}

func BenchmarkProcessSampleByName(b *testing.B) {
	src, err := NewProcess(ProcessSelector{Name: filepath.Base(os.Args[0])})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkSource(b, src)
}

func BenchmarkGeneratorSample(b *testing.B) { benchmarkSource(b, NewGenerator()) }

// The descriptor count read from /proc/self/fd's size (Linux 6.2+) agrees
// with listing the directory, and follows descriptors opened and closed.
func TestCountFDsAgreesWithListing(t *testing.T) {
	path := append([]byte("/proc/self/fd"), 0)
	var buf []byte
	count := func() (sized, listed uint64) {
		n, ok := countFDs(unix.AT_FDCWD, path, &buf)
		if !ok {
			t.Fatal("countFDs failed")
		}
		fd, err := unix.Open("/proc/self/fd", unix.O_DIRECTORY|unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		m, ok := countEntries(fd, &buf)
		if !ok {
			t.Fatal("countEntries failed")
		}
		return n, m
	}
	n0, m0 := count()
	var files []*os.File
	for range 100 {
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	n1, m1 := count()
	for _, f := range files {
		f.Close()
	}
	if n0 != m0 || n1 != m1 || n1-n0 != 100 {
		t.Fatalf("before: %d by size, %d listed; with 100 more: %d by size, %d listed", n0, m0, n1, m1)
	}
}

// A pid file that is not a regular file is an error of the sample, at
// once: a FIFO does not block the sampler, /dev/zero does not fill its
// memory.
func TestProcessPIDFileNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "srv.pid")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", t.TempDir()} {
		p, err := newProcess("testdata/procs", ProcessSelector{PIDFile: path})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := tryPoints(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want not a regular file", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the sample hangs", path)
		}
	}
}
