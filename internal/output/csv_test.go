package output

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CSV rows hold each interval's own figures, one row per action.
func TestCSVRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.csv")
	c, err := NewCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range knownIntervals() {
		if err := c.Write(context.Background(), iv); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+3*2 {
		t.Fatalf("%d rows", len(rows))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	// Interval 0, page: 6 values 50 100 100 900 1000 2000000 µs, 1 timeout, 1 skipped.
	r := rows[1]
	for name, want := range map[string]string{"repetition": "0", "interval": "0", "end": "2026-11-29T01:00:01Z", "phase": "steady",
		"action": "page", "count": "6", "ok": "4", "errors": "1", "skipped": "1", "dropped": "2", "bytes_in": "1000",
		"latency_p50_ms": "0.1", "latency_max_ms": "2000", "users": "3", "client_cpu_cores": "0.5", "client_bound": "0"} {
		if got := r[col[name]]; got != want {
			t.Errorf("%s = %q, want %q (row %s)", name, got, want, strings.Join(r, ","))
		}
	}
	if rows[4][col["client_bound"]] != "1" || rows[2][col["action"]] != "post" || rows[2][col["latency_p99_ms"]] != "3" {
		t.Errorf("rows %v", rows)
	}
}
