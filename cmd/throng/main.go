// Command throng simulates a population of users against a real server and
// measures what they experience and what the server pays. See the README.
//
// For developers: THRONG_CPUPROFILE=FILE writes a Go CPU profile of the
// whole command to FILE, THRONG_MEMPROFILE=FILE a profile of what it
// allocated (go tool pprof -sample_index=alloc_space FILE) when it ends.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/throng-io/throng/internal/cli"
)

func main() {
	if path := os.Getenv("THRONG_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "throng: THRONG_CPUPROFILE:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "throng: THRONG_CPUPROFILE:", err)
			os.Exit(2)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	code := cli.Main(os.Args[1:], os.Stdout, os.Stderr)
	if path := os.Getenv("THRONG_MEMPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "throng: THRONG_MEMPROFILE:", err)
		}
	}
	if code != 0 {
		os.Exit(code)
	}
}
