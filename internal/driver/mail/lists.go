package mail

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/driver/mail/msggen"
	"github.com/throng-io/throng/internal/scenario"
)

// Lists is the "mail.lists" block: the distribution lists the server
// expands, so that one send fans out on the server. Either throng
// generates them (count, min, avg, max, format: the Exchange study's 100
// lists of 2/10/20 members, which testenv writes for Postfix and Prepare
// gives the embedded server), or the scenario describes the server's own:
// inline (members) or imported from a CSV file (file). A message to a list
// owes a delivery to each member that is a user of the run; members that
// are not (another domain, a number beyond the run's users) are not
// tracked.
type Lists struct {
	Count  int    `yaml:"count"`
	Min    int    `yaml:"min"`
	Avg    int    `yaml:"avg"`
	Max    int    `yaml:"max"`
	Format string `yaml:"format"` // names generated list N (default "list%03d")
	// File is the server's lists as CSV, one list per row or a list over
	// several rows: LIST,MEMBER[,MEMBER...] (see docs/mail.md). A relative
	// path is read from the current directory, like ${file:PATH}.
	File string `yaml:"file"`
	// Members is the server's lists inline: list address -> member
	// addresses.
	Members scenario.Node `yaml:"members"`

	described []listDef // File or Members, nested lists expanded; nil: generated
	from      string    // where described came from, for Describe
}

// listDef is one described list: its address and its members' addresses,
// nested lists expanded, distinct, in the order first named.
type listDef struct {
	addr    string
	members []string
}

// Bounds on described lists: what one file or block may hold.
const (
	maxLists       = 100_000
	maxListMembers = 10_000_000 // over every list, nested ones expanded
	maxListsFile   = 256 << 20  // bytes
)

func (l *Lists) validate(b scenario.Node, domain string) []error {
	described := l.File != "" || !l.Members.IsZero()
	if !described && l.Count == 0 {
		return nil
	}
	if described {
		switch {
		case l.Count != 0 || l.Min != 0 || l.Avg != 0 || l.Max != 0:
			return []error{b.Errorf("lists", "lists: count/min/avg/max generate lists, file and members describe the server's: use one way")}
		case l.File != "" && !l.Members.IsZero():
			return []error{b.Errorf("lists", "lists: give the server's lists in a file or inline (members), not both")}
		}
		var raw []rawList
		var errs []error
		if l.File != "" {
			raw, errs = readListsFile(l.File, domain)
			if len(errs) > 0 {
				return prefixErrs(b, errs)
			}
			l.from = l.File
		} else {
			raw, errs = decodeMembers(l.Members, domain)
			if len(errs) > 0 {
				return errs
			}
			l.from = "mail.lists.members"
		}
		if len(raw) == 0 {
			return []error{b.Errorf("lists", "lists: %s holds no list", l.from)}
		}
		defs, err := expandLists(raw)
		if err != nil {
			return []error{b.Errorf("lists", "lists: %v", err)}
		}
		l.described = defs
		return nil
	}
	var errs []error
	if l.Count < 0 || l.Count > maxLists {
		errs = append(errs, b.Errorf("lists.count", "count must be 0..100000"))
	}
	if l.Min < 1 || l.Min > l.Avg || l.Avg > l.Max {
		errs = append(errs, b.Errorf("lists", "want 1 <= min <= avg <= max, got %d/%d/%d", l.Min, l.Avg, l.Max))
	}
	if strings.Count(l.Format, "%") != 1 || !validVerb(l.Format) || strings.ContainsAny(l.Format, " @") {
		errs = append(errs, b.Errorf("lists.format", "format %q: want one %%d verb, like list%%03d", l.Format))
	}
	return errs
}

// prefixErrs places errors found in the lists file under the block's
// lists key (they carry the file's own positions).
func prefixErrs(b scenario.Node, errs []error) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = b.Errorf("lists", "%v", e)
	}
	return out
}

// number is how many lists there are.
func (l *Lists) number() int {
	if l.described != nil {
		return len(l.described)
	}
	return l.Count
}

func (l *Lists) describe() string {
	switch {
	case l.described != nil:
		members := 0
		for _, d := range l.described {
			members += len(d.members)
		}
		return fmt.Sprintf("%d lists from %s, %d members (nested lists expanded)", len(l.described), l.from, members)
	case l.Count == 0:
		return "none"
	}
	return fmt.Sprintf("%d lists generated from the number of users, members min %d / avg %d / max %d", l.Count, l.Min, l.Avg, l.Max)
}

// describeListMembers adds to a run's settings what the report needs to
// say which of the described lists' members the run cannot watch:
// "lists_foreign_members", the members that are not user addresses of the
// run's naming (another domain, another name), with a few of them, and
// "lists_users_named", one more than the highest user index they name,
// which the report compares with the run's users.
func (c *Config) describeListMembers(m map[string]string) {
	if c.Lists.described == nil {
		return
	}
	foreign := map[string]bool{}
	var some []string
	need := 0
	for _, d := range c.Lists.described {
		for _, a := range d.members {
			if id, ok := c.userID(a); ok {
				need = max(need, id+1)
			} else if !foreign[addrKey(a)] {
				foreign[addrKey(a)] = true
				if len(some) < 3 {
					some = append(some, a)
				}
			}
		}
	}
	if len(foreign) > 0 {
		m["lists_foreign_members"] = fmt.Sprintf("%d (%s)", len(foreign), strings.Join(some, ", "))
	}
	if need > 0 {
		m["lists_users_named"] = strconv.Itoa(need)
	}
}

// listSet is the run's lists resolved against its users: each list's
// address, the users of the run it reaches and the member addresses
// outside the run (not tracked).
type listSet struct {
	n       int // the run's users
	addrs   []string
	index   map[string]int // addrKey -> list
	members [][]int        // users of the run, distinct
	outside [][]string
}

// lists returns the lists resolved for n users, computed once per n.
func (c *Config) lists(n int) *listSet {
	if ls := c.listsCache.Load(); ls != nil && ls.n == n {
		return ls
	}
	c.listsMu.Lock()
	defer c.listsMu.Unlock()
	if ls := c.listsCache.Load(); ls != nil && ls.n == n {
		return ls
	}
	ls := &listSet{n: n, index: map[string]int{}}
	l := &c.Lists
	for k := range l.number() {
		var addr string
		var users []int
		var outside []string
		if l.described != nil {
			addr = l.described[k].addr
			for _, m := range l.described[k].members {
				if id, ok := c.userID(m); ok && id < n {
					users = append(users, id)
				} else {
					outside = append(outside, m)
				}
			}
		} else {
			addr = fmt.Sprintf(l.Format, k+1) + "@" + c.Domain
			if n > 0 {
				users = l.listMembers(k, n)
			}
		}
		ls.index[addrKey(addr)] = k
		ls.addrs = append(ls.addrs, addr)
		ls.members = append(ls.members, users)
		ls.outside = append(ls.outside, outside)
	}
	c.listsCache.Store(ls)
	return ls
}

// untracked describes the list members outside a run of n users ("" when
// there are none): how many, and a few of them.
func (c *Config) untracked(n int) string {
	ls := c.lists(n)
	seen := map[string]bool{}
	var some []string
	for _, o := range ls.outside {
		for _, a := range o {
			if !seen[addrKey(a)] {
				seen[addrKey(a)] = true
				if len(some) < 3 {
					some = append(some, a)
				}
			}
		}
	}
	if len(seen) == 0 {
		return ""
	}
	return fmt.Sprintf("%d list members are not users of this run (%d users), like %s: mail to them is not tracked",
		len(seen), n, strings.Join(some, ", "))
}

// listMembers returns the global user indices of generated list k's
// members among n users: a triangular size distribution with the lists'
// min, mode and max chosen so that its mean is Avg, and distinct members.
// Membership depends only on the list's index and the number of users,
// never on the seed, so the alias file can be written before the run.
func (l *Lists) listMembers(k, n int) []int {
	r := msggen.NewRNG(msggen.Mix(0x6c697374, uint64(k)))
	lo, hi := float64(l.Min), float64(l.Max)
	mode := math.Max(lo, math.Min(hi, 3*float64(l.Avg)-lo-hi))
	size := int(math.Round(triangular(r, lo, mode, hi)))
	size = max(1, min(size, n))
	seen := make(map[int]bool, size)
	out := make([]int, 0, size)
	for len(out) < size {
		u := int(r.Next() % uint64(n))
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

func triangular(r *msggen.RNG, a, c, b float64) float64 {
	if b <= a {
		return a
	}
	u := r.Float()
	f := (c - a) / (b - a)
	if u < f {
		return a + math.Sqrt(u*(b-a)*(c-a))
	}
	return b - math.Sqrt((1-u)*(b-a)*(b-c))
}

// ListAliases returns the distribution lists for n users as the MTA's
// alias map: list address -> member addresses, nested lists expanded
// (testenv writes it for Postfix; the embedded server gets it through its
// Provisioner).
func (c *Config) ListAliases(n int) map[string][]string {
	ls := c.lists(n)
	m := make(map[string][]string, len(ls.addrs))
	for k, addr := range ls.addrs {
		var addrs []string
		for _, u := range ls.members[k] {
			addrs = append(addrs, c.Address(u))
		}
		m[addr] = append(addrs, ls.outside[k]...)
	}
	return m
}

// DefaultListAliases is ListAliases for a scenario with the default user
// names and domain (user0001@example.test...) and these generated lists:
// what `testenv up postfix -lists N` writes for the presets.
func DefaultListAliases(l Lists, users int) map[string][]string {
	c := &Config{Settings: defaultSettings()}
	if l.Format == "" {
		l.Format = c.Lists.Format
	}
	c.Lists = l
	return c.ListAliases(users)
}

// listIndex returns the list whose address is addr.
func (c *Config) listIndex(addr string, n int) (int, bool) {
	if c.Lists.number() == 0 {
		return 0, false
	}
	k, ok := c.lists(n).index[addrKey(addr)]
	return k, ok
}
