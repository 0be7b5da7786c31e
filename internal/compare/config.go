package compare

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// ConfigDiff is one configuration key whose value differs between the
// runs: a key path of the scenario file (web.keepalive), a command-line
// override (--users), the target, or a setting the driver reported,
// negotiated ones included (settings.negotiated_dialect).
type ConfigDiff struct {
	Key    string   `json:"key"`
	Values []string `json:"values"` // per run; "" where the key is absent
}

// ignoredKeys name a configuration, they do not change it.
var ignoredKeys = []string{"name", "description", "label", "--label", "settings.note"}

// ignored reports whether a key is no part of the configuration: a name,
// or a threshold (the scenario's thresholds: list, --threshold), which
// judges the outcome of a run without changing what it does; each run's
// thresholds' outcomes are shown beside the comparison instead.
func ignored(key string) bool {
	if slices.Contains(ignoredKeys, key) || key == "--threshold" {
		return true
	}
	rest, ok := strings.CutPrefix(key, "thresholds")
	return ok && (rest == "" || rest[0] == '[' || rest[0] == '.')
}

// configDiffs lists the keys whose values differ, in the order: scenario
// keys and the target (sorted), overrides, driver settings.
func configDiffs(views []*view) []ConfigDiff {
	flat := make([]map[string]string, len(views))
	var scen, over, sets []string
	seen := map[string]bool{}
	for i, v := range views {
		m := &v.run.Meta
		f := map[string]string{}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(m.Source), &doc); err == nil && doc != nil {
			flatten("", doc, f)
		}
		// The target the run used (an embedded server's port is no
		// difference of configuration).
		f["target"] = m.Target
		if at := strings.Index(m.Target, " at "); strings.HasPrefix(m.Target, "embedded ") && at > 0 {
			f["target"] = m.Target[:at]
		}
		for k := range f {
			if !seen[k] {
				seen[k] = true
				scen = append(scen, k)
			}
		}
		for k, val := range m.Overrides {
			f[k] = val
			if !seen[k] {
				seen[k] = true
				over = append(over, k)
			}
		}
		for k, val := range m.Settings {
			key := "settings." + k
			f[key] = val
			if !seen[key] {
				seen[key] = true
				sets = append(sets, key)
			}
		}
		flat[i] = f
	}
	sort.Strings(scen)
	sort.Strings(over)
	sort.Strings(sets)
	var out []ConfigDiff
	for _, k := range append(append(scen, over...), sets...) {
		if ignored(k) {
			continue
		}
		d := ConfigDiff{Key: k}
		differ := false
		for i := range views {
			d.Values = append(d.Values, flat[i][k])
			if flat[i][k] != flat[0][k] {
				differ = true
			}
		}
		if differ {
			out = append(out, d)
		}
	}
	return out
}

// flatten writes every scalar of a YAML document under its key path:
// mappings by "a.b", sequences by "a[0]".
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			flatten(join(prefix, k), val, out)
		}
	case []any:
		for i, val := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), val, out)
		}
	case nil:
		out[prefix] = "null"
	case string:
		out[prefix] = x
	case float64:
		out[prefix] = strconv.FormatFloat(x, 'g', -1, 64)
	default:
		out[prefix] = fmt.Sprint(x)
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// configText says one difference in words: "web.keepalive: true → false".
func configText(d ConfigDiff) string {
	vals := make([]string, len(d.Values))
	for i, v := range d.Values {
		vals[i] = v
		if v == "" {
			vals[i] = "(unset)"
		}
		if len(vals[i]) > 60 {
			vals[i] = vals[i][:57] + "..."
		}
	}
	return d.Key + ": " + strings.Join(vals, " → ")
}
