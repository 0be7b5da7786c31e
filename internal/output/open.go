package output

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// Kinds are the sinks --output takes, KIND=TARGET.
var Kinds = []string{"csv", "prometheus-rw", "otlp"}

// Spec is one --output value, parsed.
type Spec struct {
	Kind, Target string
}

// Name is the spec as results show it: a URL's user information (a
// password) is left out.
func (s Spec) Name() string {
	t := s.Target
	if u, err := url.Parse(t); err == nil && u.User != nil {
		u.User = nil
		t = u.String()
	}
	return s.Kind + "=" + t
}

// ParseSpec reads KIND=TARGET: csv=FILE, prometheus-rw=URL, otlp=URL (the
// URLs http or https).
func ParseSpec(v string) (Spec, error) {
	kind, target, ok := strings.Cut(v, "=")
	if !ok || target == "" {
		return Spec{}, fmt.Errorf("%q: want KIND=TARGET, KIND one of %s", v, strings.Join(Kinds, ", "))
	}
	switch kind {
	case "csv":
	case "prometheus-rw", "otlp":
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Spec{}, fmt.Errorf("%s=%s: want an http:// or https:// URL", kind, Spec{kind, target}.Name()[len(kind)+1:])
		}
		if u.User != nil {
			where := "$" + RemoteWriteTokenEnv + " (a bearer token)"
			if kind == "otlp" {
				where = "$OTEL_EXPORTER_OTLP_HEADERS (like Authorization=Bearer%20TOKEN)"
			}
			return Spec{}, fmt.Errorf("%s: no user or password in the URL (ps shows the command line): give credentials in %s", Spec{kind, target}.Name(), where)
		}
	default:
		return Spec{}, fmt.Errorf("%q: unknown output %q; the outputs are %s", v, kind, strings.Join(Kinds, ", "))
	}
	return Spec{Kind: kind, Target: target}, nil
}

// Open makes the sink of a spec for run.
func Open(ctx context.Context, s Spec, run Run) (Sink, error) {
	switch s.Kind {
	case "csv":
		return NewCSV(s.Target)
	case "prometheus-rw":
		return NewRemoteWrite(s.Target, run), nil
	case "otlp":
		return NewOTLP(ctx, s.Target, run)
	}
	return nil, fmt.Errorf("unknown output %q", s.Kind)
}
