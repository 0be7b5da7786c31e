package mail

import (
	"math"
	"testing"
)

func TestPopulationPlans(t *testing.T) {
	for _, tc := range []struct {
		name, block string
		folders     int
		inbox, per  int
	}{
		{"the Exchange study", "inbox: 100, deleted: 1, folders: 10, folder_messages: 10", 12, 100, 201},
		{"the Domino study, 700 MB all in the inbox", "mail_file: 700MB, size: 25KB, sizes: fixed, deleted: 0, folders: 0", 1, 28_000, 28_000},
		{"the Domino study, inbox 25%", "mail_file: 700MB, size: 25KB, inbox_share: 25%, deleted: 0, folders: 10", 12, 7_000, 28_000},
		{"the Domino study, 100 KB documents", "mail_file: 700MB, size: 100KB, deleted: 0, folders: 0", 1, 7_000, 7_000},
		{"inbox only", "inbox: 5, deleted: 0, folders: 0", 1, 5, 5},
	} {
		c, errs := decodeAll(t, "users: 1\nmail:\n  population: {"+tc.block+"}\nactions: [{name: check}]\n", target)
		if errs != "" {
			t.Fatalf("%s: %s", tc.name, errs)
		}
		pp := c.pop
		if len(pp.folders) != tc.folders || pp.inboxCount() != tc.inbox || pp.perUser != tc.per {
			t.Errorf("%s: %d folders, inbox %d, %d per user; want %d, %d, %d", tc.name, len(pp.folders), pp.inboxCount(), pp.perUser,
				tc.folders, tc.inbox, tc.per)
		}
	}
}

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"25%", 0.25, true}, {"0.25", 0.25, true}, {"100 %", 1, true}, {"0", 0, true}, {"120%", 0, false}, {"-1%", 0, false}, {"x", 0, false}} {
		var p Percent
		err := p.UnmarshalText([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && math.Abs(float64(p)-tc.want) > 1e-12) {
			t.Errorf("%q: %v %v", tc.in, float64(p), err)
		}
	}
}

// The Exchange study's lists: 100 lists of 2..20 members, 10 on average, distinct
// members, the same whatever the seed and call.
func TestListMembers(t *testing.T) {
	l := Lists{Count: 100, Min: 2, Avg: 10, Max: 20, Format: "list%03d"}
	total := 0
	for k := range l.Count {
		m := l.listMembers(k, 8000)
		if len(m) < 2 || len(m) > 20 {
			t.Fatalf("list %d: %d members", k, len(m))
		}
		seen := map[int]bool{}
		for _, u := range m {
			if seen[u] || u < 0 || u >= 8000 {
				t.Fatalf("list %d: member %d", k, u)
			}
			seen[u] = true
		}
		total += len(m)
	}
	if avg := float64(total) / 100; math.Abs(avg-10) > 1.2 {
		t.Errorf("mean members %.1f", avg)
	}
	a := DefaultListAliases(l, 50)
	b := DefaultListAliases(l, 50)
	if len(a) != 100 || len(a["list001@example.test"]) == 0 || len(a["list100@example.test"]) == 0 {
		t.Fatalf("aliases %d", len(a))
	}
	for k, v := range a {
		if len(v) != len(b[k]) || v[0] != b[k][0] {
			t.Fatalf("%s differs between calls", k)
		}
		if len(v) > 50 {
			t.Fatalf("%s: %d members of 50 users", k, len(v))
		}
	}
}
