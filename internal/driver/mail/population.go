package mail

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/driver/mail/msggen"
	"github.com/throng-io/throng/internal/scenario"
)

// Population is the "mail.population" block: what every user's mailbox
// holds before the run. It is created fresh before every run (the Domino
// study does this to keep runs comparable; docs/studies.md): the users' folders are emptied or
// deleted, then filled again with the same messages, generated from the
// scenario's seed.
type Population struct {
	// Create fills the mailboxes before the run (default true); false runs
	// against what the server holds already.
	Create bool `yaml:"create"`
	// Inbox, Deleted, Folders x FolderMessages: messages per user in the
	// Inbox, in "Deleted Items", and in that many extra folders
	// (the Exchange study: 100, 1, 10 x 10).
	Inbox          int `yaml:"inbox"`
	Deleted        int `yaml:"deleted"`
	Folders        int `yaml:"folders"`
	FolderMessages int `yaml:"folder_messages"`
	// Calendar and Contacts are entries per user on the CalDAV server
	// (the Exchange study: 25 and 128); ignored without one.
	Calendar int `yaml:"calendar"`
	Contacts int `yaml:"contacts"`
	// Size is the mean message size (the Exchange study: 75KB; the Domino
	// study: 25KB).
	Size scenario.Size `yaml:"size"`
	// Sizes is "realistic" (default: many small text messages and a long
	// tail with attachments, with mean Size) or "fixed" (every message
	// exactly Size).
	Sizes string `yaml:"sizes"`
	// MailFile is a target mail-file size (the Domino study: 700MB): the user then
	// holds MailFile/Size documents, InboxShare of them in the Inbox and
	// the rest spread over Folders; Inbox and FolderMessages are ignored.
	MailFile scenario.Size `yaml:"mail_file"`
	// InboxShare is the share of the documents kept in the Inbox with
	// MailFile, like 25% (default 100%).
	InboxShare Percent `yaml:"inbox_share"`
	// Parallel is the number of connections that populate at once
	// (default 8).
	Parallel int `yaml:"parallel"`
	// Maildir, when set, writes the messages directly into the server's
	// maildir storage instead of APPENDing them: a path with %u for the
	// user name, like /srv/mail/%u/Maildir. The server must not have the
	// users' mailboxes open.
	Maildir string `yaml:"maildir"`
	// MaildirOwner is "uid:gid" for the files written under Maildir
	// (default: the running user).
	MaildirOwner string `yaml:"maildir_owner"`
}

// Percent is a share written as "25%" or as a fraction 0.25.
type Percent float64

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Percent) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	div := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, div = strings.TrimSpace(t), 100
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f/div > 1 {
		return fmt.Errorf("bad share %q: want a percentage like 25%% or a fraction like 0.25", string(b))
	}
	*p = Percent(f / div)
	return nil
}

// Size distributions.
const (
	Realistic = "realistic"
	Fixed     = "fixed"
)

func defaultPopulation() Population {
	return Population{
		Create: true, Inbox: 100, Deleted: 1, Folders: 10, FolderMessages: 10,
		Calendar: 25, Contacts: 128, Size: 75_000, Sizes: Realistic, InboxShare: 1, Parallel: 8,
	}
}

func (p *Population) validate(b scenario.Node) []error {
	var errs []error
	for _, f := range []struct {
		key string
		v   int
	}{{"inbox", p.Inbox}, {"deleted", p.Deleted}, {"folders", p.Folders}, {"folder_messages", p.FolderMessages},
		{"calendar", p.Calendar}, {"contacts", p.Contacts}} {
		if f.v < 0 || f.v > 10_000_000 {
			errs = append(errs, b.Errorf("population."+f.key, "%s must be 0..10000000, got %d", f.key, f.v))
		}
	}
	if p.Folders > 10_000 {
		errs = append(errs, b.Errorf("population.folders", "folders must be at most 10000"))
	}
	if p.Size < 1000 || p.Size > msggen.MaxSize/2 {
		errs = append(errs, b.Errorf("population.size", "size must be 1KB..25MB, got %s", p.Size))
	}
	if p.Sizes != Realistic && p.Sizes != Fixed {
		errs = append(errs, b.Errorf("population.sizes", "sizes %q: want realistic or fixed", p.Sizes))
	}
	if p.MailFile > 0 && p.MailFile < p.Size {
		errs = append(errs, b.Errorf("population.mail_file", "mail_file %s is smaller than one message (%s)", p.MailFile, p.Size))
	}
	if p.MailFile > 0 && p.InboxShare < 1 && p.Folders == 0 {
		errs = append(errs, b.Errorf("population.inbox_share", "inbox_share below 100%% needs folders for the rest"))
	}
	if p.Parallel < 1 || p.Parallel > 1000 {
		errs = append(errs, b.Errorf("population.parallel", "parallel must be 1..1000"))
	}
	if p.Maildir != "" && !strings.Contains(p.Maildir, "%u") {
		errs = append(errs, b.Errorf("population.maildir", "maildir %q needs %%u for the user name", p.Maildir))
	}
	if p.MaildirOwner != "" {
		if _, _, err := parseOwner(p.MaildirOwner); err != nil {
			errs = append(errs, b.Errorf("population.maildir_owner", "%v", err))
		}
	}
	return errs
}

func parseOwner(s string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("maildir_owner %q: want uid:gid, like 5000:5000", s)
	}
	return uid, gid, nil
}

// Folder names. INBOX is IMAP's; the others are created by Prepare.
const (
	Inbox   = "INBOX"
	Deleted = "Deleted Items"
)

// folderName is the name of extra folder i (0-based): Folder01...
func folderName(i int) string { return fmt.Sprintf("Folder%02d", i+1) }

// popFolder is one folder of every user's mailbox.
type popFolder struct {
	name  string
	count int
	tag   int // folder index mixed into the message seeds
}

// popPlan is the derived population: the folders with their counts, the
// same for every user.
type popPlan struct {
	p       Population
	folders []popFolder // INBOX first
	extra   []string    // names of the extra folders (move targets)
	perUser int         // messages per user
}

func newPopPlan(s *Settings) *popPlan {
	p := s.Population
	pp := &popPlan{p: p}
	inbox, perFolder, rest := p.Inbox, p.FolderMessages, 0
	if p.MailFile > 0 {
		docs := int(int64(p.MailFile) / int64(p.Size))
		inbox = int(math.Round(float64(docs) * float64(p.InboxShare)))
		others := max(0, docs-inbox-p.Deleted)
		if p.Folders > 0 {
			perFolder, rest = others/p.Folders, others%p.Folders
		} else {
			inbox += others
		}
	}
	pp.folders = append(pp.folders, popFolder{Inbox, inbox, 0})
	if p.Deleted > 0 || p.Folders > 0 {
		pp.folders = append(pp.folders, popFolder{Deleted, p.Deleted, 1})
	}
	for i := range p.Folders {
		n := perFolder
		if i < rest {
			n++
		}
		pp.folders = append(pp.folders, popFolder{folderName(i), n, 2 + i})
		pp.extra = append(pp.extra, folderName(i))
	}
	for _, f := range pp.folders {
		pp.perUser += f.count
	}
	return pp
}

// inboxCount is the number of populated Inbox messages.
func (pp *popPlan) inboxCount() int { return pp.folders[0].count }

// describe summarises the population for the result's metadata.
func (pp *popPlan) describe() string {
	if !pp.p.Create {
		return "not created (the server's own data)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d messages per user (", pp.perUser)
	for i, f := range pp.folders {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", f.name, f.count)
		if i == 2 && len(pp.folders) > 4 {
			fmt.Fprintf(&b, ", ... %d folders in all", len(pp.folders))
			break
		}
	}
	fmt.Fprintf(&b, "), %s sizes, mean %s; calendar %d, contacts %d", pp.p.Sizes, pp.p.Size, pp.p.Calendar, pp.p.Contacts)
	if pp.p.Maildir != "" {
		b.WriteString("; written directly into maildir")
	}
	return b.String()
}

// msgSeed derives the seed of one populated message.
func msgSeed(seed uint64, user, folder, j int) uint64 {
	return msggen.Mix(msggen.Mix(msggen.Mix(seed^0x6d61696c, uint64(user)), uint64(folder)), uint64(j))
}
