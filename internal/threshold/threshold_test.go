package threshold

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		text   string
		phases string // joined by ","
		action string
		metric string
		op     string
		value  float64
		unit   string
		expr   string
	}{
		{"p95 < 500ms", "", "", "p95", "<", 500, Millis, "p95 < 500ms"},
		{"p99 <= 1s", "", "", "p99", "<=", 1000, Millis, ""},
		{"p99<=1.5s", "", "", "p99", "<=", 1500, Millis, ""},
		{"mean < 800us", "", "", "mean", "<", 0.8, Millis, ""},
		{"p95 < 500 ms", "", "", "p95", "<", 500, Millis, ""},
		{"p999 < 2s", "", "", "p99.9", "<", 2000, Millis, ""},
		{"service_p99 < 20ms", "", "", "service_p99", "<", 20, Millis, ""},
		{"error_rate < 0.1%", "", "", "error_rate", "<", 0.001, Ratio, ""},
		{"error_rate < 0.001", "", "", "error_rate", "<", 0.001, Ratio, ""},
		{"rate >= 1000/s", "", "", "rate", ">=", 1000, PerSec, ""},
		{"rate >= 600/m", "", "", "rate", ">=", 10, PerSec, ""},
		{"ok_rate > 12/8h", "", "", "ok_rate", ">", 12.0 / 28800, PerSec, ""},
		{"dropped == 0", "", "", "dropped", "==", 0, Count, ""},
		{"loss == 0", "", "", "loss", "==", 0, Count, ""},
		{"all: corrupt == 0", "all", "", "corrupt", "==", 0, Count, "corrupt == 0"},
		{"copy.corrupt <= 2", "", "copy", "corrupt", "<=", 2, Count, ""},
		{"errors != 3", "", "", "errors", "!=", 3, Count, ""},
		{"server_cpu < 80%", "", "", "server_cpu", "<", 0.8, Ratio, ""},
		{"server_cpu < 0.8", "", "", "server_cpu", "<", 0.8, Ratio, ""},
		{"server_cpu_ms_per_action < 2", "", "", "server_cpu_ms_per_action", "<", 2, Millis, ""},
		{"server_cpu_ms_per_action < 500us", "", "", "server_cpu_ms_per_action", "<", 0.5, Millis, ""},
		{"client_bound == false", "", "", "client_bound", "==", 0, Bool, ""},
		{"client_bound != TRUE", "", "", "client_bound", "!=", 1, Bool, ""},
		{"ramp-up: error_rate < 1%", "ramp-up", "", "error_rate", "<", 0.01, Ratio, "error_rate < 1%"},
		{"ramp_down:p95<1s", "ramp-down", "", "p95", "<", 1000, Millis, "p95<1s"},
		{"steady, all: rate > 5/s", "steady,all", "", "rate", ">", 5, PerSec, ""},
		{"*: p99 < 1s", "*", "", "p99", "<", 1000, Millis, "p99 < 1s"},
		{"page.p95 < 200ms", "", "page", "p95", "<", 200, Millis, "page.p95 < 200ms"},
		{"steady: page-4k.p99.9 < 1s", "steady", "page-4k", "p99.9", "<", 1000, Millis, "page-4k.p99.9 < 1s"},
		{"api.v2.error_rate < 1%", "", "api.v2", "error_rate", "<", 0.01, Ratio, ""},
	} {
		t.Run(tt.text, func(t *testing.T) {
			th, err := Parse(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(th.Phases, ",") != tt.phases || th.Action != tt.action || th.Metric != tt.metric ||
				th.Op != tt.op || th.Unit != tt.unit || !near(th.Value, tt.value) || th.Text != tt.text {
				t.Errorf("got %+v", th)
			}
			if tt.expr != "" && th.Expr != tt.expr {
				t.Errorf("expr %q, want %q", th.Expr, tt.expr)
			}
		})
	}
}

func near(a, b float64) bool { return a == b || (a-b)/b < 1e-12 && (b-a)/b < 1e-12 }

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"p95", `threshold "p95" has no comparison: write METRIC OPERATOR VALUE, like p95 < 500ms`},
		{"p95 = 5ms", `bad operator "=": write == to compare for equality`},
		{"p95 => 5ms", `bad operator "=>": want one of < <= > >= == !=`},
		{"p95 <> 5ms", `bad operator "<>"`},
		{"p95 <", `has no value after <`},
		{"< 5ms", `no metric before the operator`},
		{"p59 < 5ms", `unknown metric "p59" (did you mean "p95"?); the metrics are mean, p50,`},
		{"page.p59 < 5ms", `unknown metric "p59" (did you mean "p95"?)`},
		{"eror_rate < 1%", `unknown metric "eror_rate" (did you mean "error_rate"?)`},
		{"latency < 5ms", `unknown metric "latency"`},
		{"stedy: p95 < 5ms", `unknown phase "stedy": want ramp-up, steady, ramp-down, all or * (did you mean "steady"?)`},
		{"page.server_cpu < 80%", `server_cpu is not measured per action: write it without "page."`},
		{"p95 < 500", `p95 needs a duration with its unit, like 500ms or 500s: "500" alone could be either`},
		{"p95 < 5 parsecs", `p95: bad duration "5parsecs": want a number and a unit`},
		{"p95 < 5%", `p95: bad duration "5%"`},
		{"error_rate < 5", `error_rate 5 would be 500%: write 5% for a percentage, or a fraction up to 1`},
		{"error_rate < 1ms", `error_rate: bad value "1ms": want a percentage like 0.1% or a fraction like 0.001`},
		{"error_rate < -1%", `error_rate: "-1" is negative`},
		{"rate > 1000", `rate needs its period, like 1000/s or 1000/m`},
		{"rate > 1000/fortnight", `rate: bad period "fortnight"`},
		{"rate > fast", `rate: bad rate "fast"`},
		{"dropped == 0ms", `dropped is a count: "0ms" is not a plain number`},
		{"client_bound < true", `client_bound is true or false: compare it with == or !=, not <`},
		{"client_bound == yes", `client_bound is true or false, not "yes"`},
	} {
		t.Run(tt.text, func(t *testing.T) {
			_, err := Parse(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "threshold "+`"`+tt.text) {
				t.Errorf("error does not quote the threshold: %v", err)
			}
		})
	}
}

func TestCheckAction(t *testing.T) {
	th, _ := Parse("pgae.p95 < 1s")
	err := th.CheckAction([]string{"page", "search"})
	if err == nil || !strings.Contains(err.Error(), `no action named "pgae" (did you mean "page"?); the actions are page, search`) {
		t.Errorf("CheckAction: %v", err)
	}
	for _, text := range []string{"page.p95 < 1s", "p95 < 1s"} {
		th, _ := Parse(text)
		if err := th.CheckAction([]string{"page"}); err != nil {
			t.Errorf("%s: %v", text, err)
		}
	}
}

// The package doc lists every metric.
func TestMetricsAreDocumented(t *testing.T) {
	doc := strings.Join([]string{"mean p50 p90 p95 p99 p99.9 max", "service_mean ... service_max", "rate, ok_rate",
		"error_rate", "errors, dropped", "loss", "misdelivered", "duplicated", "corrupt", "server_cpu", "server_cpu_ms_per_action", "client_bound", "valid"}, " ")
	for _, m := range Metrics() {
		if strings.HasPrefix(m, "service_") {
			continue
		}
		if !strings.Contains(doc, m) {
			t.Errorf("metric %s is not in the doc table", m)
		}
	}
}

// A family's defaults follow the scenario's thresholds, marked, unless
// one of the scenario's judges the same metric (whatever its phase or
// action): then the scenario's replaces the default.
func TestWithDefaults(t *testing.T) {
	parse := func(texts ...string) []Threshold {
		var ts []Threshold
		for _, s := range texts {
			th, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, th)
		}
		return ts
	}
	shown := func(ts []Threshold) string {
		var s []string
		for _, th := range ts {
			if th.Default {
				s = append(s, th.Text+" (default)")
			} else {
				s = append(s, th.Text)
			}
		}
		return strings.Join(s, "; ")
	}
	for _, c := range []struct {
		scenario []string
		want     string
	}{
		{nil, "all: corrupt == 0 (default)"},
		{[]string{"p95 < 1s"}, "p95 < 1s; all: corrupt == 0 (default)"},
		{[]string{"corrupt <= 3"}, "corrupt <= 3"},
		{[]string{"copy.corrupt >= 0", "p95 < 1s"}, "copy.corrupt >= 0; p95 < 1s"},
	} {
		got, err := WithDefaults(parse(c.scenario...), []string{"all: corrupt == 0"})
		if err != nil || shown(got) != c.want {
			t.Errorf("%q: %q, %v; want %q", c.scenario, shown(got), err, c.want)
		}
	}
	if _, err := WithDefaults(nil, []string{"corrupted == 0"}); err == nil || !strings.Contains(err.Error(), "a default threshold") {
		t.Errorf("a bad default: %v", err)
	}
	// Kept in the result as a default.
	rec := Outcome{Threshold: parse("all: corrupt == 0")[0], Phase: "all"}
	rec.Threshold.Default = true
	if r := rec.Record(); !r.Default || r.Shown() != "all: corrupt == 0 (default)" {
		t.Errorf("record %+v", r)
	}
}
