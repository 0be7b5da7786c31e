// Command smb measures throng's files driver against the peers of the SMB
// study (docs/studies.md) on a private Samba (internal/testenv) on
// loopback, with the same files in the same run:
//
//   - the population rate: files/s and MB/s of writing N files of SIZE
//     bytes into the share through SMB (the driver's Prepare, as throng run
//     does before its first repetition);
//   - throng's single-connection copy-down (users: 1) against smbclient's
//     `prompt off; recurse on; mget *` into a tmpfs directory: elapsed time
//     and the ratio throng/smbclient (target <= 1.0);
//   - throng with C parallel streams (users: C, one connection each)
//     against reading the same files straight from the share's directory
//     with tar (`tar cf - DIR | cat > /dev/null`, page cache warm; `tar cf
//     /dev/null` would skip reading): the ratio throng/tar.
//
// Rounds alternate the tools; each row reports the median and every value.
//
//	go run ./bench/smb -files 50000 -rounds 3 -streams 2,4
//
// It starts its own smbd (root, Debian packages samba, smbclient and
// libnss-wrapper) and builds throng from this tree. Client CPU is the child's
// user+system time from rusage.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/throng-io/throng/bench/internal/benchkit"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/files"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/testenv"
)

type sample struct {
	tool    string
	seconds float64
	cpu     float64 // client user+system seconds
	smbd    float64 // smbd's CPU seconds (its connection processes)
	other   float64 // the host's other busy CPU seconds: other processes
}

// measure runs f and adds smbd's CPU and the host's other busy time to
// its sample: other processes on the machine show as "other".
func measure(smbdPID int, f func() sample) sample {
	h0, s0 := hostBusy(), procCPU(smbdPID)
	s := f()
	time.Sleep(200 * time.Millisecond) // smbd reaps the connection's process
	h1, s1 := hostBusy(), procCPU(smbdPID)
	s.smbd = s1 - s0
	s.other = max(0, (h1-h0)-s.smbd-s.cpu)
	return s
}

// hostBusy is the host's busy CPU seconds so far (/proc/stat).
func hostBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	check(err)
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		x, _ := strconv.ParseFloat(v, 64)
		busy += x
	}
	return busy / 100 // USER_HZ
}

// procCPU is a process's CPU seconds, its reaped children's included.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var t float64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		x, _ := strconv.ParseFloat(f[i], 64)
		t += x
	}
	return t / 100
}

func main() {
	nFiles := flag.Int("files", 50000, "files in the population")
	size := flag.Int("size", 20488, "bytes per file")
	rounds := flag.Int("rounds", 3, "alternating rounds")
	streamsFlag := flag.String("streams", "2,4", "parallel streams (users, one connection each) to measure")
	tmpfs := flag.String("tmpfs", "/dev/shm", "a tmpfs directory for smbclient's copies")
	defaultFiles := flag.Int("default-config-files", 10000, "also measure the population rate with Samba's default case handling, with this many files (0: skip)")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "bench-smb-")
	check(err)
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "throng")
	build := exec.Command("go", "build", "-o", bin, "./cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())
	smbclient, err := exec.LookPath("smbclient")
	check(err)
	tar, err := exec.LookPath("tar")
	check(err)
	var streams []int
	for _, s := range strings.Split(*streamsFlag, ",") {
		n, err := strconv.Atoi(s)
		check(err)
		streams = append(streams, n)
	}

	// case sensitive = yes: with Samba's default, creating a file scans its
	// whole directory for a name that differs only in case, so writing the
	// population into one directory is quadratic (measured below).
	srv, err := testenv.StartSamba(context.Background(), testenv.SambaOptions{ShareOptions: []string{"case sensitive = yes"}})
	check(err)
	defer srv.Stop()
	check(os.Setenv("SMB_PASSWORD", srv.Password))
	target := srv.URL + "/pop"
	popDir := filepath.Join(srv.ShareDir, "pop")
	mb := float64(*nFiles) * float64(*size) / 1e6
	fmt.Printf("Samba %s (smbd pid %d), %d files x %d B = %.1f MB (%.0f MiB), %d rounds\n",
		srv.URL, srv.PID, *nFiles, *size, mb, mb*1e6/(1<<20), *rounds)
	fmt.Printf("host: %d CPUs; client and server share them; loopback; share: case sensitive = yes\n", cpus())
	fmt.Printf("other CPU s = the host's busy time minus client and smbd: other processes (it should be near 0)\n\n")

	// The population, through the driver, as throng run's first Prepare.
	scen := filepath.Join(tmp, "copy.yaml")
	check(os.WriteFile(scen, []byte(fmt.Sprintf(`name: bench-smb
users: 1
closed: {iterations: %d}
files:
  population: {files: %d, size: %d}
  reuse: true
actions:
  - {name: copy, op: copy-down}
`, *nFiles, *nFiles, *size)), 0o644))
	t0 := time.Now()
	written := populate(scen, target)
	d := time.Since(t0).Seconds()
	fmt.Printf("population: %d files written in %.2f s: %.0f files/s, %.1f MB/s (4 connections)\n",
		written, d, float64(written)/d, float64(written)*float64(*size)/1e6/d)
	if *defaultFiles > 0 {
		def, err := testenv.StartSamba(context.Background(), testenv.SambaOptions{})
		check(err)
		alt := filepath.Join(tmp, "pop-default.yaml")
		check(os.WriteFile(alt, []byte(fmt.Sprintf("users: 1\nclosed: {iterations: 1}\nfiles: {population: {files: %d, size: %d}}\nactions: [{op: copy-down}]\n", *defaultFiles, *size)), 0o644))
		check(os.Setenv("SMB_PASSWORD", def.Password))
		t0 := time.Now()
		n := populate(alt, def.URL+"/pop")
		d := time.Since(t0).Seconds()
		check(def.Stop())
		check(os.Setenv("SMB_PASSWORD", srv.Password))
		fmt.Printf("population with Samba's default case handling: %d files in %.2f s: %.0f files/s, %.1f MB/s\n",
			n, d, float64(n)/d, float64(n)*float64(*size)/1e6/d)
	}
	fmt.Println()

	authFile := filepath.Join(tmp, "auth")
	check(os.WriteFile(authFile, []byte("username = "+srv.User+"\npassword = "+srv.Password+"\n"), 0o600))
	dest := filepath.Join(*tmpfs, "bench-smb-dest")
	defer os.RemoveAll(dest)

	// Warm the page cache (server side) and check every tool once.
	runTar(tar, popDir, *nFiles)
	var all []sample
	for r := range *rounds {
		fmt.Printf("round %d:", r+1)
		runs := []func() sample{
			func() sample { return runThrong(bin, tmp, scen, target, 1, *nFiles, "") },
			func() sample { return runSmbclient(smbclient, srv, authFile, dest, *nFiles) },
			func() sample { return runThrong(bin, tmp, scen, target, 1, *nFiles, dest) },
		}
		for _, c := range streams {
			runs = append(runs, func() sample { return runThrong(bin, tmp, scen, target, c, *nFiles, "") })
		}
		runs = append(runs, func() sample { return runTar(tar, popDir, *nFiles) })
		for _, f := range runs {
			s := measure(srv.PID, f)
			all = append(all, s)
			fmt.Printf("  %s %.2fs", s.tool, s.seconds)
		}
		fmt.Println()
	}

	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "tool\telapsed s (median)\tall runs\tfiles/s\tMB/s\tclient CPU s\tsmbd CPU s\tother CPU s\t")
	med := map[string]float64{}
	var order []string
	for _, s := range all {
		if !slices.Contains(order, s.tool) {
			order = append(order, s.tool)
		}
	}
	for _, tool := range order {
		var secs, cpu, smbd, other []float64
		for _, s := range all {
			if s.tool == tool {
				secs = append(secs, s.seconds)
				cpu = append(cpu, s.cpu)
				smbd = append(smbd, s.smbd)
				other = append(other, s.other)
			}
		}
		m := benchkit.Median(secs)
		med[tool] = m
		fmt.Fprintf(w, "%s\t%.2f\t%s\t%.0f\t%.1f\t%.2f\t%.2f\t%.2f\t\n", tool, m, list(secs), float64(*nFiles)/m, mb/m,
			benchkit.Median(cpu), benchkit.Median(smbd), benchkit.Median(other))
	}
	w.Flush()
	fmt.Println()
	ref := med["smbclient mget (tmpfs)"]
	fmt.Printf("throng 1 connection / smbclient:               %.2f  (target <= 1.0)\n", med["throng 1 conn"]/ref)
	fmt.Printf("throng 1 connection + copy to tmpfs / smbclient: %.2f\n", med["throng 1 conn, copy to tmpfs"]/ref)
	tarM := med["tar (local read)"]
	for _, c := range streams {
		tool := fmt.Sprintf("throng %d conns", c)
		fmt.Printf("throng %d streams / tar local read:             %.2f  (1 connection: %.2f)\n", c, med[tool]/tarM, med["throng 1 conn"]/tarM)
	}
}

// populate writes the population through the driver, as throng run does.
func populate(scenFile, target string) int {
	s, err := scenario.Load(scenFile, []string{"web", files.Name})
	check(err)
	c, errs := files.Decode(s.DriverConfig, target)
	if len(errs) > 0 {
		check(fmt.Errorf("%v", errs))
	}
	for _, a := range s.Actions {
		if _, errs := c.Compile(a); len(errs) > 0 {
			check(fmt.Errorf("%v", errs))
		}
	}
	c.Reuse = false
	check(c.Preflight(context.Background()))
	check(c.Prepare(context.Background(), driver.Population{TotalUsers: 1, Users: []int{0}, Seed: uint64(s.Seed)}))
	return c.Population.Files
}

func runThrong(bin, tmp, scen, target string, users, nFiles int, writeTo string) sample {
	out := filepath.Join(tmp, "r.json")
	args := []string{"run", scen, "--target", target, "--users", strconv.Itoa(users),
		"--iterations", strconv.Itoa(nFiles / users), "-q", "-o", out}
	tool := fmt.Sprintf("throng %d conns", users)
	if users == 1 {
		tool = "throng 1 conn"
	}
	if writeTo != "" {
		// write_to is a scenario key: use a copy of the scenario with it.
		b, err := os.ReadFile(scen)
		check(err)
		alt := filepath.Join(tmp, "copy-out.yaml")
		check(os.WriteFile(alt, []byte(strings.Replace(string(b), "  reuse: true\n", "  reuse: true\n  write_to: "+writeTo+"\n", 1)), 0o644))
		args[1] = alt
		tool += ", copy to tmpfs"
		check(os.RemoveAll(writeTo))
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	cmd.Stdout = io.Discard
	check(cmd.Run())
	run, err := result.ReadFile(out)
	check(err)
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	if all.Total.Errors > 0 || all.Total.Count != uint64(nFiles/users*users) {
		check(fmt.Errorf("%s: %d copies, %d errors: %v", tool, all.Total.Count, all.Total.Errors, all.Total.Messages))
	}
	return sample{tool: tool, seconds: run.Repetitions[0].ElapsedS, cpu: cpuOf(cmd.ProcessState)}
}

func runSmbclient(bin string, srv *testenv.SambaServer, authFile, dest string, nFiles int) sample {
	check(os.RemoveAll(dest))
	check(os.MkdirAll(dest, 0o755))
	port := srv.Addr[strings.LastIndexByte(srv.Addr, ':')+1:]
	cmd := exec.Command(bin, "-s", "/dev/null", "-p", port, "//127.0.0.1/"+srv.Share, "-A", authFile,
		"-D", "pop", "-c", "prompt off; recurse on; lcd "+dest+"; mget *.bin")
	// smbclient prints a line per file: into a file, not a pipe to drain.
	logf, err := os.CreateTemp("", "bench-smb-smbclient-*.log")
	check(err)
	defer os.Remove(logf.Name())
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(logf.Name())
		check(fmt.Errorf("smbclient: %v\n%s", err, tail(string(b), 20)))
	}
	d := time.Since(t0).Seconds()
	ents, err := os.ReadDir(dest)
	check(err)
	if len(ents) != nFiles {
		check(fmt.Errorf("smbclient copied %d files, want %d", len(ents), nFiles))
	}
	return sample{tool: "smbclient mget (tmpfs)", seconds: d, cpu: cpuOf(cmd.ProcessState)}
}

// runTar reads every file of dir through the kernel: tar cf - | discard.
func runTar(bin, dir string, nFiles int) sample {
	cmd := exec.Command(bin, "cf", "-", "-C", dir, ".")
	cw := &countWriter{}
	cmd.Stdout = cw
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	check(cmd.Run())
	d := time.Since(t0).Seconds()
	if cw.n < int64(nFiles)*512 {
		check(fmt.Errorf("tar wrote only %d bytes", cw.n))
	}
	return sample{tool: "tar (local read)", seconds: d, cpu: cpuOf(cmd.ProcessState)}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func cpuOf(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func cpus() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "\nprocessor") + 1
}

func list(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/smb:", err)
		os.Exit(1)
	}
}
