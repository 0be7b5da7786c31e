package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// writeJUnit writes the thresholds' outcomes for CI systems.
func writeJUnit(path string, run *result.Run, outs []threshold.Outcome) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	w := bufio.NewWriter(f)
	err = threshold.WriteJUnit(w, run, outs)
	return errors.Join(err, w.Flush(), f.Close())
}
