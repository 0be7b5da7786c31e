package mail

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listsScenario is a scenario of 5 users whose mail.lists block is block.
func listsScenario(block string) string {
	return "users: 5\nmail:\n  lists:\n" + block + "actions:\n  - {name: send, lists: 1, recipients: 0}\n"
}

// The server's lists, from a CSV file: a header row, comments, a list over
// two rows, bare names in the users' domain, a nested list, members outside
// the run. Each list reaches the run's users it names (nested lists
// expanded) and counts the others apart; the MTA's aliases are the flat
// lists; the note names the members outside the run.
func TestListsFromFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lists.csv")
	os.WriteFile(file, []byte(`list,member
# the sales team
sales@example.test,user0002@example.test,user0003
sales, bob@partner.test
all, sales@example.test , user0001,user0009
`), 0o644)
	c, errs := decodeAll(t, listsScenario("    file: "+file+"\n"), target)
	if errs != "" {
		t.Fatal(errs)
	}
	c.track.setUsers(5)
	ls := c.lists(5)
	if want := []string{"sales@example.test", "all@example.test"}; !slices.Equal(ls.addrs, want) {
		t.Fatalf("lists %q, want %q", ls.addrs, want)
	}
	for k, want := range []struct {
		members []int
		outside []string
	}{
		{[]int{1, 2}, []string{"bob@partner.test"}},
		{[]int{1, 2, 0}, []string{"bob@partner.test", "user0009@example.test"}},
	} {
		if !slices.Equal(ls.members[k], want.members) || !slices.Equal(ls.outside[k], want.outside) {
			t.Errorf("%s: members %v outside %q, want %v %q", ls.addrs[k], ls.members[k], ls.outside[k], want.members, want.outside)
		}
	}
	if k, ok := c.listIndex("ALL@Example.test", 5); !ok || k != 1 {
		t.Errorf("listIndex: %d %v", k, ok)
	}
	r := c.reachOf([]string{"all@example.test", "user0005@example.test", "x@elsewhere.test"}, []string{"x@elsewhere.test"})
	if slices.Sort(r.users); !slices.Equal(r.users, []int{0, 1, 2, 4}) || !r.open || !slices.Equal(r.lists, []int{1}) {
		t.Errorf("reach %+v", r)
	}
	if r := c.reachOf([]string{"user0005@example.test"}, nil); r.open || r.lists != nil || !slices.Equal(r.users, []int{4}) {
		t.Errorf("reach of one user %+v", r)
	}
	al := c.ListAliases(5)
	if got := al["all@example.test"]; !slices.Equal(got, []string{"user0002@example.test", "user0003@example.test", "user0001@example.test",
		"bob@partner.test", "user0009@example.test"}) {
		t.Errorf("aliases %q", got)
	}
	if note := c.untracked(5); !strings.Contains(note, "2 list members are not users of this run (5 users), like bob@partner.test, user0009@example.test") {
		t.Errorf("note %q", note)
	}
	if note := c.untracked(9); !strings.Contains(note, "1 list members") {
		t.Errorf("with 9 users: %q", note)
	}
	d := c.Describe()
	if d["lists"] != "2 lists from "+file+", 8 members (nested lists expanded)" ||
		d["lists_foreign_members"] != "1 (bob@partner.test)" || d["lists_users_named"] != "9" {
		t.Errorf("describe %q", d)
	}
}

// Described lists are decoded strictly: each problem with its place, in
// the scenario and in the file (line and column).
func TestListsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	for _, tc := range []struct {
		name, block, want string
	}{
		{"both ways", "    count: 3\n    file: x.csv\n", "count/min/avg/max generate lists, file and members describe the server's: use one way"},
		{"file and inline", "    file: x.csv\n    members: {a: [user0001]}\n", "in a file or inline (members), not both"},
		{"no file", "    file: " + filepath.Join(dir, "none.csv") + "\n", "none.csv: no such file or directory"},
		{"bad member", "    file: " + write("bad.csv", "a,user0001\nb, user0002 ,user 3\n") + "\n",
			`s.yaml:3:3: mail.lists: ` + filepath.Join(dir, "bad.csv") + `:2:14: member: "user 3" is not an address`},
		{"one field", "    file: " + write("one.csv", "a,user0001\nb\n") + "\n", "one.csv:2:1: want LIST,MEMBER[,MEMBER...], got one field"},
		{"twice", "    file: " + write("twice.csv", "a,user0001\na,USER0001@example.test\n") + "\n",
			"twice.csv:2:3: USER0001@example.test is already a member of a@example.test"},
		{"quote", "    file: " + write("quote.csv", "a,user0001\nb,\"user0002\n") + "\n", `quote.csv:2:13: extraneous or missing " in quoted-field`},
		{"cycle", "    file: " + write("cycle.csv", "a,b\nb,c,user0001\nc,a\n") + "\n",
			"list a@example.test contains itself (a@example.test → b@example.test → c@example.test → a@example.test)"},
		{"empty", "    file: " + write("empty.csv", "# nothing\n") + "\n", "holds no list"},
		{"inline member", "    members:\n      team: [user0001, \"a b\"]\n", `s.yaml:5:7: mail.lists.members.team: member: "a b" is not an address`},
		{"inline empty", "    members:\n      team: []\n", `s.yaml:5:7: mail.lists.members.team: list team@example.test has no member`},
		{"inline twice", "    members:\n      team: [user0001]\n      Team@example.test: [user0002]\n", "is given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := decodeAll(t, listsScenario(tc.block), target)
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Inline lists: in the order of their addresses; a send to lists draws
// among them.
func TestListsInline(t *testing.T) {
	c, errs := decodeAll(t, listsScenario("    members:\n      zeta: [user0001]\n      alpha@example.test: [user0002, zeta]\n"), target)
	if errs != "" {
		t.Fatal(errs)
	}
	ls := c.lists(5)
	if !slices.Equal(ls.addrs, []string{"alpha@example.test", "zeta@example.test"}) || !slices.Equal(ls.members[0], []int{1, 0}) {
		t.Errorf("lists %q members %v", ls.addrs, ls.members)
	}
	if c.Lists.number() != 2 || !strings.HasPrefix(c.Describe()["lists"], "2 lists from mail.lists.members") {
		t.Errorf("%d lists, %q", c.Lists.number(), c.Describe()["lists"])
	}
}
