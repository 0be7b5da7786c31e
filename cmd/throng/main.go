// Command throng simulates a population of users against a real server and
// measures what they experience and what the server pays. See the README.
package main

import (
	"os"

	"github.com/throng-io/throng/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
