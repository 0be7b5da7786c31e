package scenario

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"90s", 90 * time.Second, ""},
		{"17m", 17 * time.Minute, ""},
		{"2h", 2 * time.Hour, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"1d", 24 * time.Hour, ""},
		{"0", 0, ""},
		{"30", 0, "has no unit"},
		{"", 0, "empty duration"},
		{"ten seconds", 0, "bad duration"},
		{"5x", 0, "bad duration"},
	} {
		got, err := ParseDuration(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseDuration(%q) error = %v, want it to mention %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got.D() != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got.D(), err, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"100B", 100, false},
		{"75KB", 75_000, false},
		{"20KiB", 20_480, false},
		{"1GB", 1_000_000_000, false},
		{"1MiB", 1 << 20, false},
		{"20488", 20_488, false},
		{"2.5KB", 2_500, false},
		{"0B", 0, false},
		{"1.5B", 0, true},
		{"-1KB", 0, true},
		{"75kb", 0, true},
		{"KB", 0, true},
		{"12 apples", 0, true},
	} {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.err || (!tt.err && int64(got) != tt.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
	// String gives back something ParseSize reads to the same value.
	for _, z := range []Size{0, 1, 999, 75_000, 20_480, 1_000_000_000} {
		back, err := ParseSize(z.String())
		if err != nil || back != z {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", z.String(), back, err, z)
		}
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"35/s", 35, false},
		{"12/8h", 12.0 / (8 * 3600), false},
		{"4/h", 4.0 / 3600, false},
		{"1.4/8h", 1.4 / (8 * 3600), false},
		{"2000/s", 2000, false},
		{"30/m", 0.5, false},
		{"6/90s", 6.0 / 90, false},
		{"10/day", 10.0 / 86400, false},
		{"0/s", 0, false}, // parses; Validate refuses it where a rate must start something
		{"35", 0, true},
		{"x/s", 0, true},
		{"5/0s", 0, true},
		{"-1/s", 0, true},
		{"5/fortnight", 0, true},
	} {
		got, err := ParseRate(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseRate(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if !tt.err && math.Abs(got.PerSecond-tt.want) > 1e-12 {
			t.Errorf("ParseRate(%q) = %g/s, want %g/s", tt.in, got.PerSecond, tt.want)
		}
	}
}
