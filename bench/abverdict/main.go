// Command abverdict checks throng's A/B verdicts on real configurations
// against a private Samba (internal/testenv) on loopback: the SMB study's copy
// of many small files at reduced scale, over SMB 2.0.2 against SMB 3.1.1
// (the client pins the dialect), run as
//
//	throng run smb2.yaml smb3.yaml --runs 5 --trim 1
//
// that is, interleaved (A B A B ...), each repetition fresh, and the
// comparison printed. With -aa it runs the 3.1.1 configuration against
// itself instead: an A/A comparison, where no row may be called different;
// with -encrypt the 3.1.1 configuration requires encryption.
//
//	go run ./bench/abverdict -files 2000 -runs 5
//
// It starts two smbd on the same files (root, Debian packages samba and
// libnss-wrapper)
// and builds throng from this tree. The machine is what it is: on a shared
// one, say so beside the figures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// errCheck carries a failure of check up to run, whose deferred calls
// stop the servers (os.Exit would leave them running).
type errCheck struct{ err error }

func run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(errCheck)
			if !ok {
				panic(r)
			}
			err = e.err
		}
	}()
	nFiles := flag.Int("files", 2000, "files in the population (and copies per repetition)")
	size := flag.Int("size", 20488, "bytes per file")
	runs := flag.Int("runs", 5, "repetitions of each configuration")
	trim := flag.Int("trim", 1, "repetitions dropped at each end")
	aa := flag.Bool("aa", false, "compare SMB 3.1.1 with itself (A/A) instead of 2.0.2 with 3.1.1")
	encrypt := flag.Bool("encrypt", false, "the 3.1.1 configuration requires encryption (AES on every message)")
	keep := flag.String("out", "", "keep the results (one per configuration, the comparison) in this directory")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "bench-abverdict-")
	check(err)
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "throng")
	build := exec.Command("go", "build", "-o", bin, "./cmd/throng")
	build.Stderr = os.Stderr
	check(build.Run())

	// Two smbd on the same files: A as Samba ships, B the same or (with
	// -encrypt) encrypting every session. Each scenario names its server
	// and the file of its password.
	share, err := os.MkdirTemp("", "bench-abverdict-share-")
	check(err)
	defer os.RemoveAll(share)
	check(os.Chmod(share, 0o755))
	optsB := testenv.SambaOptions{ShareOptions: []string{"case sensitive = yes"}, ShareDir: share}
	if *encrypt {
		optsB.Encrypt = "required"
	}
	srvA, err := testenv.StartSamba(context.Background(), testenv.SambaOptions{ShareOptions: []string{"case sensitive = yes"}, ShareDir: share})
	check(err)
	defer srvA.Stop()
	srvB, err := testenv.StartSamba(context.Background(), optsB)
	check(err)
	defer srvB.Stop()

	scen := func(name, dialect, extra string, srv *testenv.SambaServer) string {
		pw := filepath.Join(tmp, name+".password")
		check(os.WriteFile(pw, []byte(srv.Password), 0o600))
		p := filepath.Join(tmp, name+".yaml")
		check(os.WriteFile(p, []byte(fmt.Sprintf(`name: %s
users: 1
target: %s/ab
closed:
  iterations: %d
files:
  dialect: "%s"
  password: ${file:%s}
%s  population:
    files: %d
    size: %d
  reuse: true
  verify: true
actions:
  - name: copy
    op: copy-down
`, name, srv.URL, *nFiles, dialect, pw, extra, *nFiles, *size)), 0o644))
		return p
	}
	extra := ""
	if *encrypt {
		extra = "  encryption: required\n"
	}
	a, b := scen("smb2", "2.0.2", "", srvA), scen("smb3", "3.1.1", extra, srvB)
	if *aa {
		a = b
	}
	out := filepath.Join(tmp, "out")
	if *keep != "" {
		out = *keep
	}
	fmt.Printf("Samba %s and %s on the same share, %d files x %d B per repetition, %d runs each (trim %d), interleaved\n\n",
		srvA.URL, srvB.URL, *nFiles, *size, *runs, *trim)
	cmd := exec.Command(bin, "run", a, b, "--runs", strconv.Itoa(*runs), "--trim", strconv.Itoa(*trim), "-q", "-o", out)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "throng run: %v\n", err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "compare.json"))
	check(err)
	var c compare.Comparison
	check(json.Unmarshal(raw, &c))
	called := 0
	for _, r := range c.Rows {
		switch r.Diffs[1].Verdict {
		case compare.Better, compare.Worse, compare.Higher, compare.Lower:
			called++
			fmt.Printf("called: %s %s (%+.1f%%)\n", r.ID, r.Diffs[1].Verdict, float64(r.Diffs[1].Change))
		}
	}
	fmt.Printf("\n%d of %d rows called different\n", called, len(c.Rows))
	return nil
}

// check stops the bench on an error, through run's deferred clean-ups.
func check(err error) {
	if err != nil {
		panic(errCheck{err})
	}
}
