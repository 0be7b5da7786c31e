package mail

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
	"github.com/throng-io/throng/internal/scenario"
)

// kind is one kind of mail action.
type kind struct {
	name string
	imap bool // needs the logged-on IMAP session
	dav  bool // needs the CalDAV server (skipped without one)
	run  func(ctx context.Context, s *session, a *action) error
	// params returns a fresh struct holding the kind's keys and their
	// defaults, and a function copying them into the action.
	params func(c *Config) (any, func(a *action) []error)
}

// action is a compiled mail action.
type action struct {
	name string
	kind *kind

	again      bool     // logoff: log on again at once
	recipients int      // send: mean direct recipients
	lists      float64  // send: mean distribution lists per message
	size       int      // send: mean size
	sizes      string   // send: size distribution
	to         []string // send: explicit addresses
	read       float64  // process-inbox: share of new messages read
	move       float64  // process-inbox: share moved to a folder
	del        float64  // process-inbox: share deleted (expunged)
	reply      float64  // process-inbox: share answered
	max        int      // process-inbox: most new messages handled at once
	folder     string   // browse, search: mailbox ("any": a random one)
	page       int      // browse: headers per page
	text       string   // search: the needle ("": a population codename)
	verify     bool     // search: check the hits against the population
	days       int      // browse-calendar, free-busy: the window
	attendees  int      // meeting-request
	mailbox    string   // select: a mailbox that may not exist (faults)
	command    string   // command: a raw IMAP command line (faults, server checks)
}

// kinds lists the action kinds, by name.
var kinds = kindTable()

func kindTable() map[string]*kind {
	m := map[string]*kind{}
	for _, k := range []*kind{
		{name: "logon", imap: false, run: doLogon, params: noParams},
		{name: "logoff", imap: false, run: doLogoff, params: logoffParams},
		{name: "send", run: doSend, params: sendParams},
		{name: "process-inbox", imap: true, run: doProcessInbox, params: processParams},
		{name: "browse", imap: true, run: doBrowse, params: browseParams},
		{name: "search", imap: true, run: doSearch, params: searchParams},
		{name: "check", imap: true, run: doCheck, params: noParams},
		{name: "select", imap: true, run: doSelect, params: selectParams},
		{name: "command", imap: true, run: doCommand, params: commandParams},
		{name: "create-appointment", dav: true, run: doCreateAppointment, params: noParams},
		{name: "browse-calendar", dav: true, run: doBrowseCalendar, params: daysParams(7)},
		{name: "free-busy", dav: true, run: doFreeBusy, params: daysParams(1)},
		{name: "meeting-request", dav: true, run: doMeetingRequest, params: meetingParams},
	} {
		m[k.name] = k
	}
	return m
}

// KindNames lists the action kinds, sorted.
func KindNames() []string {
	var n []string
	for k := range kinds {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Compile implements driver.Config: an action's "kind" (default: its name
// when that is a kind) chooses which keys it takes; any other key is an
// error.
func (c *Config) Compile(a scenario.Action) (driver.Action, []error) {
	var head struct {
		Kind string        `yaml:"kind"`
		Rest scenario.Node `yaml:",rest"`
	}
	errs := a.Params.Decode(&head)
	if head.Kind == "" {
		head.Kind = a.Name
	}
	k, ok := kinds[head.Kind]
	if !ok {
		return nil, append(errs, a.Params.Errorf("kind", "action %q: kind %q is not a mail action (known: %s)",
			a.Name, head.Kind, strings.Join(KindNames(), ", ")))
	}
	if c.submitOnly && (k.imap || k.name == "logon" || k.name == "logoff") {
		errs = append(errs, a.Params.Errorf("", "action %q (%s) needs an IMAP server: an smtp:// target only submits (send, and the calendar actions); use imap://host:port?smtp=host:port", a.Name, k.name))
	}
	act := &action{name: a.Name, kind: k}
	p, apply := k.params(c)
	if !head.Rest.IsZero() {
		errs = append(errs, head.Rest.Decode(p)...)
	}
	for _, err := range apply(act) {
		errs = append(errs, a.Params.Errorf("", "action %q (%s): %v", a.Name, k.name, err))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return act, nil
}

func noParams(*Config) (any, func(*action) []error) {
	return &struct{}{}, func(*action) []error { return nil }
}

func logoffParams(*Config) (any, func(*action) []error) {
	p := &struct {
		Again bool `yaml:"again"` // log on again at once (LoadSim's "logoff and log on again")
	}{Again: true}
	return p, func(a *action) []error { a.again = p.Again; return nil }
}

func sendParams(c *Config) (any, func(*action) []error) {
	p := &struct {
		Recipients int           `yaml:"recipients"` // mean direct recipients (1..2n-1, uniform)
		Lists      float64       `yaml:"lists"`      // mean distribution lists per message
		Size       scenario.Size `yaml:"size"`       // mean size (default: the population's)
		Sizes      string        `yaml:"sizes"`      // realistic or fixed (default: the population's)
		To         []string      `yaml:"to"`         // explicit recipients instead of drawn ones
	}{Recipients: 3, Size: c.Population.Size, Sizes: c.Population.Sizes}
	return p, func(a *action) []error {
		var errs []error
		if p.Recipients < 0 || p.Recipients > 1000 {
			errs = append(errs, fmt.Errorf("recipients must be 0..1000"))
		}
		if p.Lists < 0 || p.Lists > 100 || (p.Lists > 0 && c.Lists.number() == 0) {
			errs = append(errs, fmt.Errorf("lists must be 0..100, and needs mail.lists (count, file or members)"))
		}
		if p.Recipients == 0 && p.Lists == 0 && len(p.To) == 0 {
			errs = append(errs, fmt.Errorf("a message needs recipients, lists or to"))
		}
		if p.Size < 200 || p.Size > msggen.MaxSize {
			errs = append(errs, fmt.Errorf("size must be 200B..64MiB"))
		}
		if p.Sizes != Realistic && p.Sizes != Fixed {
			errs = append(errs, fmt.Errorf("sizes %q: want realistic or fixed", p.Sizes))
		}
		for _, t := range p.To {
			if !strings.Contains(t, "@") || strings.ContainsAny(t, " <>\r\n") {
				errs = append(errs, fmt.Errorf("to: %q is not an address", t))
			}
		}
		a.recipients, a.lists, a.size, a.sizes, a.to = p.Recipients, p.Lists, int(p.Size), p.Sizes, p.To
		return errs
	}
}

func processParams(*Config) (any, func(*action) []error) {
	p := &struct {
		Read   Percent `yaml:"read"`   // share of new messages whose body is read (default 100%)
		Move   Percent `yaml:"move"`   // share moved to one of the folders (default 10%)
		Delete Percent `yaml:"delete"` // share deleted and expunged (default 20%)
		Reply  Percent `yaml:"reply"`  // share answered to their sender (default 0)
		Max    int     `yaml:"max"`    // most new messages handled in one go (default 50)
	}{Read: 1, Move: 0.1, Delete: 0.2, Max: 50}
	return p, func(a *action) []error {
		var errs []error
		if p.Move+p.Delete > 1 {
			errs = append(errs, errors.New("move + delete is above 100%"))
		}
		if p.Max < 1 {
			errs = append(errs, errors.New("max must be at least 1"))
		}
		a.read, a.move, a.del, a.reply, a.max = float64(p.Read), float64(p.Move), float64(p.Delete), float64(p.Reply), p.Max
		return errs
	}
}

func browseParams(c *Config) (any, func(*action) []error) {
	p := &struct {
		Folder string `yaml:"folder"` // "any" (default: a random folder, INBOX included) or a name
		Page   int    `yaml:"page"`   // headers imapclient.Fetched (default: mail.page)
	}{Folder: "any", Page: c.Page}
	return p, func(a *action) []error {
		a.folder, a.page = p.Folder, p.Page
		if p.Page < 1 {
			return []error{errors.New("page must be at least 1")}
		}
		return nil
	}
}

func searchParams(*Config) (any, func(*action) []error) {
	p := &struct {
		Text   string `yaml:"text"`   // needle (default: a population codename, drawn each time)
		Folder string `yaml:"folder"` // mailbox (default INBOX)
		Verify bool   `yaml:"verify"` // check the hits against the population (default true with msggen.Codenames)
	}{Folder: Inbox, Verify: true}
	return p, func(a *action) []error {
		a.text, a.folder, a.verify = p.Text, p.Folder, p.Verify && p.Text == "" && p.Folder == Inbox
		if strings.ContainsAny(p.Text, "\r\n\"\\") {
			return []error{errors.New("text must be one line without quotes or backslashes")}
		}
		return nil
	}
}

func selectParams(*Config) (any, func(*action) []error) {
	p := &struct {
		Mailbox string `yaml:"mailbox"`
	}{Mailbox: Inbox}
	return p, func(a *action) []error { a.mailbox = p.Mailbox; return nil }
}

func commandParams(*Config) (any, func(*action) []error) {
	p := &struct {
		Command string `yaml:"command"` // one line, without the tag, like "NOOP" or "XYZZY"
	}{}
	return p, func(a *action) []error {
		a.command = p.Command
		if p.Command == "" || strings.ContainsAny(p.Command, "\r\n") || strings.HasSuffix(p.Command, "}") {
			return []error{errors.New("command must be one line of IMAP, without a literal")}
		}
		u := strings.ToUpper(strings.Fields(p.Command)[0])
		if u == "LOGOUT" || u == "IDLE" || u == "AUTHENTICATE" || u == "STARTTLS" {
			return []error{fmt.Errorf("command %s would change the session's state; use the logon/logoff actions", u)}
		}
		return nil
	}
}

func daysParams(def int) func(*Config) (any, func(*action) []error) {
	return func(*Config) (any, func(*action) []error) {
		p := &struct {
			Days int `yaml:"days"`
		}{Days: def}
		return p, func(a *action) []error {
			a.days = p.Days
			if p.Days < 1 || p.Days > 366 {
				return []error{errors.New("days must be 1..366")}
			}
			return nil
		}
	}
}

func meetingParams(*Config) (any, func(*action) []error) {
	p := &struct {
		Attendees int `yaml:"attendees"` // invited users (default 3)
	}{Attendees: 3}
	return p, func(a *action) []error {
		a.attendees = p.Attendees
		if p.Attendees < 1 || p.Attendees > 100 {
			return []error{errors.New("attendees must be 1..100")}
		}
		return nil
	}
}

// doLogon logs on afresh: LOGOUT when logged on, then the full log-on.
func doLogon(ctx context.Context, s *session, _ *action) error {
	if s.ic != nil {
		s.ic.Logout(ctx)
		s.dropConn()
	}
	if err := s.logon(ctx, false); err != nil {
		s.dropConn()
		return err
	}
	return nil
}

// doLogoff logs off (LOGOUT) and, with again, logs on at once; otherwise
// the next IMAP action logs on (and its time includes that).
func doLogoff(ctx context.Context, s *session, a *action) error {
	var err error
	if s.ic != nil && !s.ic.Broken {
		err = s.ic.Logout(ctx)
	}
	s.dropConn()
	if a.again {
		if lerr := s.logon(ctx, false); lerr != nil {
			s.dropConn()
			return lerr
		}
	}
	return err
}

// doCommand sends one raw IMAP command on the INBOX; a NO or BAD is
// counted by class with the server's text.
func doCommand(ctx context.Context, s *session, a *action) error {
	if err := s.ensureInbox(ctx); err != nil {
		return err
	}
	name := strings.ToUpper(strings.Fields(a.command)[0])
	err := s.ic.Command(ctx, name, a.command)
	switch name {
	case "SELECT", "EXAMINE", "CLOSE", "UNSELECT", "DELETE", "RENAME":
		// The command may have changed the selected mailbox.
		if s.ic.Broken {
			return err
		}
		if serr := s.ic.Select(ctx, Inbox, false, s.c.Mode == Cached); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// doSelect selects a mailbox (a fault check: one that does not exist gives
// the server's NO), then the INBOX again.
func doSelect(ctx context.Context, s *session, a *action) error {
	if err := s.ic.Select(ctx, a.mailbox, true, false); err != nil {
		if s.ic.Broken {
			return err
		}
		s.ensureInbox(ctx)
		return err
	}
	return s.ensureInbox(ctx)
}
