package mail

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docBlocks returns the fenced code blocks of docs/mail.md's mail.lists
// section, in order.
func docBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../../docs/mail.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "### `mail.lists`")
	if start < 0 {
		t.Fatal("docs/mail.md has no mail.lists section")
	}
	end := strings.Index(doc[start:], "\n## ")
	if end < 0 {
		t.Fatal("docs/mail.md: the mail.lists section has no end")
	}
	blocks := strings.Split(doc[start:start+end], "```")[1:]
	var out []string
	for i := 0; i < len(blocks); i += 2 { // the code, then the prose between
		_, code, _ := strings.Cut(blocks[i], "\n")
		out = append(out, code)
	}
	return out
}

// The mail.lists examples of docs/mail.md run: the CSV file and the
// inline block describe the same lists (nested ones expanded), and the
// awk line turns a Postfix virtual map into a file throng reads.
func TestListsDocExamples(t *testing.T) {
	blocks := docBlocks(t)
	if len(blocks) != 4 {
		t.Fatalf("%d code blocks in the mail.lists section, want 4 (yaml file, csv, yaml inline, awk)", len(blocks))
	}
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("lists.csv", []byte(blocks[1]), 0o644)
	indent := func(yaml string) string { // the mail: block's lists, under a scenario
		_, lists, _ := strings.Cut(yaml, "mail:\n")
		return "users: 5\nmail:\n" + lists + "actions:\n  - {name: send, lists: 1, recipients: 0}\n"
	}
	fromFile, errs := decodeAll(t, indent(blocks[0]), target)
	if errs != "" {
		t.Fatalf("the file example: %s", errs)
	}
	inline, errs := decodeAll(t, indent(blocks[2]), target)
	if errs != "" {
		t.Fatalf("the inline example: %s", errs)
	}
	a, b := fromFile.ListAliases(5), inline.ListAliases(5)
	for _, l := range []string{"sales@example.test", "all@example.test"} {
		x, y := slices.Clone(a[l]), slices.Clone(b[l])
		slices.Sort(x)
		slices.Sort(y)
		if len(x) == 0 || !slices.Equal(x, y) {
			t.Errorf("%s: %q from the file, %q inline", l, a[l], b[l])
		}
	}
	if got := a["all@example.test"]; len(got) != 4 {
		t.Errorf("all: %q, want sales's 3 and user0001", got)
	}
	// The awk line, on a virtual map: comments, spacing, commas.
	os.WriteFile(filepath.Join(dir, "virtual"), []byte("# lists\nlist001@example.test  user0002@example.test, user0003@example.test\n\n"+
		"all@example.test\tuser0001@example.test,list001@example.test\n"), 0o644)
	awk := strings.TrimSpace(blocks[3])
	awk = strings.ReplaceAll(awk, "/etc/postfix/virtual", "virtual")
	if out, err := exec.Command("sh", "-c", awk).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", awk, err, out)
	}
	converted, errs := decodeAll(t, "users: 5\nmail:\n  lists: {file: lists.csv}\nactions:\n  - {name: send, lists: 1, recipients: 0}\n", target)
	if errs != "" {
		t.Fatal(errs)
	}
	if got := converted.ListAliases(5)["all@example.test"]; !slices.Equal(got, []string{"user0001@example.test", "user0002@example.test", "user0003@example.test"}) {
		t.Errorf("the converted map's all: %q", got)
	}
}
