package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// exitMention is a statement in the docs or the help that a case ends with
// an exit code, and the words just before it that say which case.
type exitMention struct {
	where   string
	code    int
	context string
}

var exitRe = regexp.MustCompile(`(?i)\(?exit(?: code)? (\d{1,3})\b`)

// exitKeywords say which case a statement is about, each with its code.
// The keyword nearest before the code decides.
var exitKeywords = []struct {
	word string
	code int
}{
	{"threshold", ExitThresholds}, {"junit", ExitThresholds}, {"corrupt", ExitThresholds}, {"fails the run", ExitThresholds},
	{"bad input", ExitBadInput}, {"file:line", ExitBadInput}, {"one message per problem", ExitBadInput},
	{"overflow", ExitBadInput}, {"not a result", ExitBadInput},
	{"partial", ExitPartial}, {"max_duration", ExitPartial},
	{"cannot be done", ExitFailure}, {"cannot run", ExitFailure}, {"could not", ExitFailure}, {"down or unresolvable", ExitFailure},
	{"not where it was asked", ExitFailure}, {"nothing was run", ExitFailure}, {"encrypt", ExitFailure}, {"negotiated", ExitFailure},
	{"sigint", ExitInterrupted}, {"ctrl-c", ExitInterrupted}, {"sigterm", ExitTerminated},
}

// mentions finds every "exit N" / "exit code N" in text.
func mentions(where, text string) []exitMention {
	flat := strings.Join(strings.Fields(text), " ")
	var out []exitMention
	for _, m := range exitRe.FindAllStringSubmatchIndex(flat, -1) {
		code, _ := strconv.Atoi(flat[m[2]:m[3]])
		out = append(out, exitMention{where, code, flat[max(0, m[0]-160):min(len(flat), m[1]+20)]})
	}
	return out
}

// classify gives the code the nearest keyword before the mention implies
// (or, failing that, one just after it); ok is false when none is there.
func classify(m exitMention) (code int, word string, ok bool) {
	lower := strings.ToLower(m.context)
	at := strings.Index(lower, "exit")
	for i := strings.LastIndex(lower, "exit "+strconv.Itoa(m.code)); i >= 0; i = -1 {
		at = i
	}
	best := -1
	for _, k := range exitKeywords {
		if i := strings.LastIndex(lower[:max(at, 0)], k.word); i > best {
			best, code, word, ok = i, k.code, k.word, true
		}
	}
	if !ok {
		for _, k := range exitKeywords {
			if strings.Contains(lower[at:], k.word) {
				return k.code, k.word, true
			}
		}
	}
	// Signals are named after their code: "exit 130 for SIGINT, 143 for SIGTERM".
	if m.code == ExitInterrupted && strings.Contains(lower, "sigint") {
		return ExitInterrupted, "sigint", true
	}
	return code, word, ok
}

// helpTexts is the help of every command and flag of the program.
func helpTexts() map[string]string {
	root := &cobra.Command{Use: "throng"}
	prep := newPreparer()
	root.AddCommand(runCommand(prep, io.Discard, io.Discard), reportCommand(io.Discard), compareCommand(io.Discard, io.Discard),
		presetsCommand(prep, io.Discard), serveCommand(prep, io.Discard, io.Discard), mergeCommand(io.Discard),
		agentCommand(prep, io.Discard), k8sCommand(prep, io.Discard), capacityCommand(prep, io.Discard, io.Discard))
	out := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out["help of "+c.CommandPath()] = c.Long + "\n" + c.Flags().FlagUsages()
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return out
}

// TestDocsExitCodes checks every statement about an exit code in the
// README, docs/ and the commands' help against the program's codes: the
// case it names (by its words) must have that code. A statement whose case
// cannot be told fails too: say it in words the table knows.
func TestDocsExitCodes(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md", "../../CONTRIBUTING.md")
	var all []exitMention
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		all = append(all, mentions(filepath.Base(f), string(b))...)
	}
	for where, text := range helpTexts() {
		all = append(all, mentions(where, text)...)
	}
	if len(all) < 15 {
		t.Fatalf("found only %d statements about exit codes: is the pattern broken?", len(all))
	}
	for _, m := range all {
		code, word, ok := classify(m)
		switch {
		case !ok:
			t.Errorf("%s: cannot tell which case exit %d is for: %q", m.where, m.code, m.context)
		case code != m.code:
			t.Errorf("%s: says exit %d, but the program gives %d for %q: %q", m.where, m.code, code, word, m.context)
		}
	}
}

// TestReadmeExitCodeList: the README's list of exit codes names every code
// the program has, and no other.
func TestReadmeExitCodeList(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	i := strings.Index(text, "Exit codes: ")
	if i < 0 {
		t.Fatal("README has no exit code list")
	}
	list := text[i:]
	list = list[:strings.Index(list, "143 by SIGTERM")+len("143 by SIGTERM")]
	for _, c := range []struct {
		code int
		word string
	}{{ExitOK, "done"}, {ExitThresholds, "a threshold failed"}, {ExitBadInput, "bad input"}, {ExitPartial, "partial"},
		{ExitFailure, "could not do the work"}, {ExitInterrupted, "stopped by Ctrl-C"}, {ExitTerminated, "by SIGTERM"}} {
		if !strings.Contains(list, strconv.Itoa(c.code)+" "+c.word) {
			t.Errorf("README's exit code list lacks %d %s", c.code, c.word)
		}
	}
}

// throngCmdRe finds a throng command line in the docs: in a code block or
// an inline span, up to a pipe, a comment, a redirection or the span's end.
var throngCmdRe = regexp.MustCompile("(?:^|[\\s`(])throng ([a-z0-9][^`|#;&>\\n]*)")

var flagWordRe = regexp.MustCompile(`(?:^|\s)(--[a-z][a-z0-9-]*|-[a-zA-Z])\b`)

// TestDocsFlagsExist checks every flag the README and docs/ give to a
// throng command against that command's flags: a renamed or removed flag
// fails here, not in a user's shell.
func TestDocsFlagsExist(t *testing.T) {
	root := &cobra.Command{Use: "throng"}
	prep := newPreparer()
	root.AddCommand(versionCommand(io.Discard), runCommand(prep, io.Discard, io.Discard), reportCommand(io.Discard),
		compareCommand(io.Discard, io.Discard), presetsCommand(prep, io.Discard), serveCommand(prep, io.Discard, io.Discard),
		mergeCommand(io.Discard), agentCommand(prep, io.Discard), k8sCommand(prep, io.Discard), capacityCommand(prep, io.Discard, io.Discard))
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	run, _, _ := root.Find([]string{"run"})
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md", "../../CONTRIBUTING.md")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, m := range throngCmdRe.FindAllStringSubmatch(line, -1) {
				words := strings.Fields(m[1])
				cmd, _, err := root.Find(words)
				if err != nil || cmd == root {
					continue // prose ("throng measures ..."), not a command
				}
				target := cmd
				for _, w := range words {
					if w == "--" {
						target = run // k8s: what follows -- is for throng run
						continue
					}
					fm := flagWordRe.FindStringSubmatch(" " + w)
					if fm == nil {
						continue
					}
					name, _, _ := strings.Cut(fm[1], "=")
					checked++
					var ok bool
					if strings.HasPrefix(name, "--") {
						ok = target.Flags().Lookup(name[2:]) != nil || target.InheritedFlags().Lookup(name[2:]) != nil
					} else {
						ok = target.Flags().ShorthandLookup(name[1:]) != nil
					}
					if !ok {
						t.Errorf("%s:%d: `throng %s` has no flag %s: %q", filepath.Base(f), n+1, target.Name(), name, strings.TrimSpace(m[0]))
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d flags checked: is the pattern broken?", checked)
	}
}
