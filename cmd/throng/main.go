// Command throng simulates a population of users against a real server and
// measures what they experience and what the server pays. See the README.
//
// For developers: THRONG_CPUPROFILE=FILE writes a Go CPU profile of the
// whole command to FILE (go tool pprof FILE).
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
		code := cli.Main(os.Args[1:], os.Stdout, os.Stderr)
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
