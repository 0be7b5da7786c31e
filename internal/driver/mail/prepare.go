package mail

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/caldav"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

// PopulationStats is what the last Prepare wrote.
type PopulationStats struct {
	Users    int
	Messages int64
	Bytes    int64
	Elapsed  time.Duration // the messages' part
	Method   string        // "IMAP APPEND over 8 connections", "maildir files"
	Calendar int64         // calendar entries and contacts stored
	DAVTime  time.Duration // the calendar's part
	// Synthetic: the server generates the messages as they are read
	// (a Synthesizer); Bytes is what they hold, not what was written.
	Synthetic bool
	// Checked is the users whose mailbox was checked rather than written
	// (KeepPopulation); nothing else is then set but Users and Elapsed.
	Checked int64
}

// MBps is the population rate in MB/s (10^6 bytes).
func (p PopulationStats) MBps() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Bytes) / 1e6 / p.Elapsed.Seconds()
}

func (p PopulationStats) String() string {
	if p.Synthetic {
		size := fmt.Sprintf("%.1f MB", float64(p.Bytes)/1e6)
		if p.Bytes >= 1e9 {
			size = fmt.Sprintf("%.1f GB", float64(p.Bytes)/1e9)
		}
		return fmt.Sprintf("mail: population: %d users, %d messages, %s, set up in %s by %s",
			p.Users, p.Messages, size, p.Elapsed.Round(time.Millisecond), p.Method)
	}
	s := fmt.Sprintf("mail: population: %d users, %d messages, %.1f MB in %s (%.1f MB/s, %.0f messages/s) by %s",
		p.Users, p.Messages, float64(p.Bytes)/1e6, p.Elapsed.Round(time.Millisecond), p.MBps(),
		float64(p.Messages)/max(p.Elapsed.Seconds(), 1e-9), p.Method)
	if p.Calendar > 0 {
		s += fmt.Sprintf("; %d calendar entries and contacts in %s (%.0f/s)", p.Calendar, p.DAVTime.Round(time.Millisecond),
			float64(p.Calendar)/max(p.DAVTime.Seconds(), 1e-9))
	}
	return s
}

// Stats returns what the last Prepare wrote.
func (c *Config) Stats() PopulationStats { return c.popStats }

// LastPreparation implements driver.PreparationReporter: the messages part
// of the last Prepare (the calendar's is in Stats).
func (c *Config) LastPreparation() driver.Preparation {
	p := c.popStats
	return driver.Preparation{Users: p.Users, Items: p.Messages, Bytes: p.Bytes, Elapsed: p.Elapsed, Method: p.Method, Checked: p.Checked}
}

// KeepPopulation implements driver.PopulationKeeper: the mailboxes a
// Prepare made for as many users or more are taken as they are now, each
// user of pop checked: it logs on (its account exists, its password
// holds) and its INBOX is selected, whose next UID is where this run's
// deliveries start (as after a Prepare). Nothing is written, and the
// accounts are not provisioned again. The content checks of populated
// messages (search's verify) are off: earlier runs changed the mailboxes.
func (c *Config) KeepPopulation(ctx context.Context, pop driver.Population) error {
	c.track.setUsers(pop.TotalUsers)
	for _, id := range pop.Users {
		c.track.claim(id)
	}
	c.popSeed.Store(nil)
	if c.targetErr != nil {
		return c.targetErr
	}
	start := time.Now()
	var checked atomic.Int64
	err := c.forEachUser(ctx, pop.Users, c.Population.Parallel, func(ctx context.Context, id int) error {
		ic, err := c.logon(ctx, id)
		if err != nil {
			return err
		}
		defer ic.Logout(ctx)
		if err := ic.Select(ctx, Inbox, true, false); err != nil {
			return err
		}
		c.track.advance(id, ic.UIDValidity, max(ic.UIDNext, 1)-1)
		checked.Add(1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("mail: the population prepared for the search: %w", err)
	}
	c.popStats = PopulationStats{Users: len(pop.Users), Elapsed: time.Since(start), Checked: checked.Load(),
		Method: "kept: each user logs on and selects the INBOX"}
	return nil
}

// SetLog sends the driver's one-line reports (Prepare's population rate,
// the drain's) to fn instead of stderr.
func (c *Config) SetLog(fn func(string)) { c.popLogOut = fn }

// Prepare implements driver.Config: the server's accounts and lists are
// written when it lets throng (the embedded server), then every user of
// this process gets a fresh mailbox: its folders deleted, the INBOX
// emptied, and the population appended again over parallel connections
// (or written into maildir directly), then the calendar and contacts.
func (c *Config) Prepare(ctx context.Context, pop driver.Population) error {
	c.track.setUsers(pop.TotalUsers)
	for _, id := range pop.Users {
		c.track.claim(id)
	}
	if note := c.untracked(pop.TotalUsers); note != "" {
		c.logf("mail: lists: %s", note)
	}
	seed := pop.Seed
	c.popSeed.Store(nil)
	if c.Provisioner != nil {
		users := make([]string, pop.TotalUsers)
		for i := range users {
			users[i] = c.UserName(i)
		}
		if err := c.Provisioner.Provision(users, c.password, c.ListAliases(pop.TotalUsers)); err != nil {
			return fmt.Errorf("mail: provisioning the embedded server: %w", err)
		}
	}
	if !c.Population.Create || c.targetErr != nil {
		return c.targetErr
	}
	start := time.Now()
	var msgs, bytes, dav atomic.Int64
	method := fmt.Sprintf("IMAP APPEND over %d connections", min(c.Population.Parallel, len(pop.Users)))
	fill := func(ctx context.Context, id int) error {
		n, b, err := c.populateIMAP(ctx, id, seed)
		msgs.Add(n)
		bytes.Add(b)
		return err
	}
	syn, synthetic := c.Provisioner.(Synthesizer)
	synthetic = synthetic && c.Population.Maildir == ""
	if synthetic {
		// The server generates every message as it is read: nothing is
		// written, whatever the population's size.
		method = "the embedded server, which generates each message as it is read (nothing stored)"
		fill = func(ctx context.Context, id int) error {
			n, b, err := c.synthesize(syn, id, seed)
			msgs.Add(n)
			bytes.Add(b)
			return err
		}
	}
	if c.Population.Maildir != "" {
		method = "maildir files"
		fill = func(ctx context.Context, id int) error {
			n, b, err := c.populateMaildir(id, seed)
			msgs.Add(n)
			bytes.Add(b)
			return err
		}
	}
	if err := c.forEachUser(ctx, pop.Users, c.Population.Parallel, fill); err != nil {
		return fmt.Errorf("mail: population: %w", err)
	}
	elapsed := time.Since(start)
	davStart := time.Now()
	if c.dav != nil && (c.Population.Calendar > 0 || c.Population.Contacts > 0) {
		err := c.forEachUser(ctx, pop.Users, c.Population.Parallel, func(ctx context.Context, id int) error {
			n, err := c.populateDAV(ctx, id, seed)
			dav.Add(n)
			return err
		})
		if err != nil {
			return fmt.Errorf("mail: calendar population: %w", err)
		}
	}
	c.popSeed.Store(&seed)
	c.popStats = PopulationStats{Users: len(pop.Users), Messages: msgs.Load(), Bytes: bytes.Load(),
		Elapsed: elapsed, Method: method, Calendar: dav.Load(), DAVTime: time.Since(davStart), Synthetic: synthetic}
	c.logf("%s", c.popStats.String())
	return nil
}

// logf writes one line of the driver's news (the population rate, what
// the drain could not look at) to the log SetLog gave, else stderr.
func (c *Config) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if c.popLogOut != nil {
		c.popLogOut(line)
	} else {
		fmt.Fprintln(os.Stderr, line)
	}
}

// popDraw draws what the seed decides of populated message j of a folder
// of user id: its seed, its sender and its size.
func (c *Config) popDraw(seed uint64, id int, f popFolder, j int) (ms uint64, from, size int) {
	ms = msgSeed(seed, id, f.tag, j)
	r := msggen.NewRNG(msggen.Mix(ms, 1))
	from = id
	if n := c.track.totalUsers(); n > 1 {
		from = r.Intn(n)
	}
	return ms, from, msggen.Size(r, int(c.Population.Size), c.Population.Sizes != Fixed)
}

// popSpec describes populated message j of a folder of user id: the
// same spec, so the same bytes, for the same seed.
func (c *Config) popSpec(seed uint64, id int, f popFolder, j int) msggen.Spec {
	ms, from, size := c.popDraw(seed, id, f, j)
	return msggen.Spec{Seed: ms, Size: size, From: c.Address(from), To: []string{c.Address(id)},
		Date: msggen.PopDate.Add(time.Duration(j) * 37 * time.Minute)}
}

// popMessage appends populated message j of a folder of user id to b.
func (c *Config) popMessage(b []byte, seed uint64, id int, f popFolder, j int) []byte {
	sp := c.popSpec(seed, id, f, j)
	b, _ = msggen.Build(b, &sp)
	return b
}

// popFlags are the flags every populated message starts with.
var popFlags = []string{`\Seen`}

// Synthesizer is a Provisioner that holds a population as a recipe
// instead of messages (the embedded server): a mailbox's first count
// messages are generated whenever a client reads them, from the
// population's seed, the user and the folder, so a population of any
// size costs the server next to no memory.
type Synthesizer interface {
	// Synthesize makes user's mailbox (created when missing, and empty)
	// hold count messages, message j being message(dst, j) appended to
	// dst, with internal date date and these flags, and returns the
	// mailbox's UIDVALIDITY and UIDNEXT. message must be safe for
	// concurrent use and give the same bytes for the same j every time.
	Synthesize(user, mailbox string, count int, date time.Time, flags []string,
		message func(dst []byte, j int) []byte) (uidValidity, uidNext uint32, err error)
}

// synthesize gives user id a fresh mailbox on a Synthesizer: the same
// messages populateIMAP would append, generated by the server on demand.
// It returns the messages and the bytes they hold.
func (c *Config) synthesize(syn Synthesizer, id int, seed uint64) (n, bytes int64, err error) {
	user := c.UserName(id)
	for _, f := range c.pop.folders {
		validity, next, err := syn.Synthesize(user, f.name, f.count, msggen.PopDate, popFlags, func(dst []byte, j int) []byte {
			return c.popMessage(dst, seed, id, f, j)
		})
		if err != nil {
			return n, bytes, err
		}
		for j := range f.count {
			_, _, size := c.popDraw(seed, id, f, j)
			bytes += int64(size)
		}
		n += int64(f.count)
		if f.name == Inbox {
			c.track.advance(id, validity, max(next, 1)-1)
		}
	}
	return n, bytes, nil
}

// batchBytes bounds the messages sent in one pipelined batch.
const batchBytes = 4 << 20

// populateIMAP makes user id's mailbox fresh over IMAP.
func (c *Config) populateIMAP(ctx context.Context, id int, seed uint64) (n, bytes int64, err error) {
	ic, err := c.logon(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if lerr := ic.Logout(ctx); err == nil && lerr != nil && !ic.Broken {
			err = lerr
		}
	}()
	names, err := ic.List(ctx)
	if err != nil {
		return 0, 0, err
	}
	// Children before their parents.
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, name := range names {
		if name != Inbox {
			if err := ic.Simple(ctx, "DELETE", "DELETE", name); err != nil && driver.Classify(err) != driver.Status4xx {
				return 0, 0, err
			}
		}
	}
	if err := ic.Select(ctx, Inbox, false, false); err != nil {
		return 0, 0, err
	}
	if ic.Exists > 0 {
		if err := ic.Simple(ctx, "STORE", `STORE 1:* +FLAGS.SILENT (\Deleted)`, ""); err != nil {
			return 0, 0, err
		}
		if err := ic.Simple(ctx, "EXPUNGE", "EXPUNGE", ""); err != nil {
			return 0, 0, err
		}
	}
	if err := ic.Simple(ctx, "CLOSE", "CLOSE", ""); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 0, 1<<20)
	var batch [][]byte
	for _, f := range c.pop.folders {
		if f.name != Inbox {
			if err := ic.Create(ctx, f.name); err != nil {
				return n, bytes, err
			}
		}
		buf, batch = buf[:0], batch[:0]
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			err := ic.Append(ctx, f.name, msggen.PopDate, batch)
			ic.Release()
			buf, batch = buf[:0], batch[:0]
			return err
		}
		for j := range f.count {
			at := len(buf)
			buf = c.popMessage(buf, seed, id, f, j)
			batch = append(batch, buf[at:])
			n++
			bytes += int64(len(buf) - at)
			if len(buf) >= batchBytes || len(batch) >= 64 {
				if err := flush(); err != nil {
					return n, bytes, err
				}
			}
		}
		if err := flush(); err != nil {
			return n, bytes, err
		}
	}
	// The INBOX as populated: deliveries of the run come above this.
	if err := ic.Select(ctx, Inbox, true, false); err != nil {
		return n, bytes, err
	}
	c.track.advance(id, ic.UIDValidity, max(ic.UIDNext, 1)-1)
	return n, bytes, nil
}

// populateDAV makes user id's calendar and address book fresh.
func (c *Config) populateDAV(ctx context.Context, id int, seed uint64) (int64, error) {
	user := c.UserName(id)
	if err := c.dav.ResetCollections(ctx, user, c.password, c.Population.Contacts > 0); err != nil {
		return 0, err
	}
	var n int64
	for j := range c.Population.Calendar {
		uid := davUID(user, "pop", j)
		r := msggen.NewRNG(msgSeed(seed, id, 1<<20, j))
		if _, err := c.dav.Put(ctx, user, c.password, caldav.CalPath(user)+uid+".ics", "text/calendar; charset=utf-8",
			msggen.AppendEvent(nil, r, uid, "", nil, "")); err != nil {
			return n, err
		}
		n++
	}
	for j := range c.Population.Contacts {
		uid := davUID(user, "card", j)
		r := msggen.NewRNG(msgSeed(seed, id, 1<<21, j))
		if _, err := c.dav.Put(ctx, user, c.password, caldav.CardPath(user)+uid+".vcf", "text/vcard; charset=utf-8",
			msggen.AppendCard(nil, r, uid, c.Domain)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
