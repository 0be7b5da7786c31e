package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a span of time written with a unit: "90s", "17m", "2h", "1h30m",
// "250ms". A bare 0 is accepted; any other bare number is an error, because
// "30" could mean seconds or minutes and a scenario must not be ambiguous.
type Duration time.Duration

// ParseDuration parses a scenario duration. It accepts Go duration syntax
// (ns, us, µs, ms, s, m, h) plus "d" for days of 24 h.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return 0, fmt.Errorf("empty duration: want a number and a unit, like 90s, 17m or 2h")
	}
	if strings.HasSuffix(s, "d") && !strings.HasSuffix(s, "nd") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err == nil && n >= 0 && n < 1e5 {
			return Duration(n * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, fmt.Errorf("duration %q has no unit: write it like %ss or %sm", s, s, s)
		}
		return 0, fmt.Errorf("bad duration %q: want a number and a unit, like 90s, 17m, 2h or 250ms", s)
	}
	return Duration(d), nil
}

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String prints the duration in its shortest Go form ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText prints the duration so that ParseDuration reads it back.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Size is a number of bytes written with a unit: "100B", "75KB" (75,000),
// "20KiB" (20,480), "1GB". A bare integer is a number of bytes.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	// Longest suffixes first, so "KiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseSize parses a scenario size.
func ParseSize(s string) (Size, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("size %q is negative", s)
		}
		return Size(n), nil
	}
	for _, u := range sizeUnits {
		if !strings.HasSuffix(s, u.suffix) {
			continue
		}
		num := strings.TrimSpace(strings.TrimSuffix(s, u.suffix))
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			break
		}
		if f < 0 {
			return 0, fmt.Errorf("size %q is negative", s)
		}
		v := f * u.mult
		if v > math.MaxInt64/2 {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
		}
		return Size(v), nil
	}
	return 0, fmt.Errorf("bad size %q: want a number and a unit, like 100B, 75KB (x1000), 20KiB (x1024) or 1GB", s)
}

// String prints the size with the largest decimal unit that divides it exactly.
func (z Size) String() string {
	for _, u := range []struct {
		s string
		m int64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if z != 0 && int64(z)%u.m == 0 {
			return strconv.FormatInt(int64(z)/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(int64(z), 10) + "B"
}

// MarshalText prints the size so that ParseSize reads it back.
func (z Size) MarshalText() ([]byte, error) { return []byte(z.String()), nil }

// Rate is a number of events per period: "35/s", "12/8h" (12 per 8-hour day),
// "4/h", "2000/s", "1.4/8h". It is kept as events per second.
type Rate struct {
	PerSecond float64
	text      string
}

// ParseRate parses a scenario rate "N/PERIOD". PERIOD is a duration ("8h",
// "90s") or a bare unit ("s", "m", "h", "d" for one of that unit).
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	num, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("bad rate %q: want a count per period, like 35/s, 12/8h or 4/h", s)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return Rate{}, fmt.Errorf("bad rate %q: %q is not a number", s, num)
	}
	if n < 0 {
		return Rate{}, fmt.Errorf("rate %q is negative", s)
	}
	per = strings.TrimSpace(per)
	switch per {
	case "s", "m", "h", "d", "ms":
		per = "1" + per
	case "sec", "second":
		per = "1s"
	case "min", "minute":
		per = "1m"
	case "hour":
		per = "1h"
	case "day":
		per = "1d"
	}
	d, err := ParseDuration(per)
	if err != nil || d <= 0 {
		return Rate{}, fmt.Errorf("bad rate %q: the period %q must be a positive duration, like s, 8h or 90s", s, per)
	}
	return Rate{PerSecond: n / d.D().Seconds(), text: s}, nil
}

// RatePerSecond returns a Rate of r events per second.
func RatePerSecond(r float64) Rate { return Rate{PerSecond: r} }

// String prints the rate as written, or as events per second.
func (r Rate) String() string {
	if r.text != "" {
		return r.text
	}
	return strconv.FormatFloat(r.PerSecond, 'g', -1, 64) + "/s"
}

// MarshalText prints the rate so that ParseRate reads it back.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Interval returns the mean time between two events; 0 for a zero rate.
func (r Rate) Interval() time.Duration {
	if r.PerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / r.PerSecond)
}

// UnmarshalText parses a duration; see ParseDuration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	*d = v
	return err
}

// UnmarshalText parses a size; see ParseSize.
func (z *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	*z = v
	return err
}

// UnmarshalText parses a rate; see ParseRate.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	*r = v
	return err
}
