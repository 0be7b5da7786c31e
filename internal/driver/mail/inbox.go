package mail

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/imapclient"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

// newMsg is a message process-inbox handles.
type newMsg struct {
	uid  uint32
	from string // the sender's address, for a reply
}

// doProcessInbox is LoadSim's "process inbox": NOOP to learn of new mail,
// the headers of every message that arrived since the last time, the body
// of some (read), then some moved to a folder, some deleted (\Deleted and
// expunge), some answered.
func doProcessInbox(ctx context.Context, s *session, a *action) error {
	ic := s.ic
	if err := s.ensureInbox(ctx); err != nil {
		return err
	}
	if err := ic.Noop(ctx); err != nil {
		return err
	}
	if err := s.checkNew(ctx, time.Now(), nil); err != nil {
		return err
	}
	// Only what checkNew saw: a message arriving now must be seen (its
	// delivery counted) before it can be moved or deleted.
	seen, _ := s.c.track.watermark(s.id, ic.UIDValidity)
	var news []newMsg
	if ic.Exists > 0 && seen > s.processed {
		set := strconv.FormatUint(uint64(s.processed)+1, 10) + ":" + strconv.FormatUint(uint64(seen), 10)
		err := s.fetchHeaders(ctx, true, set, func(f *imapclient.Fetched) {
			if f.UID > s.processed && f.UID <= seen && !f.Deleted && len(news) < a.max {
				news = append(news, newMsg{uid: f.UID, from: addressOf(headerValue(f.Header, "From"))})
			}
		})
		if err != nil {
			return err
		}
	}
	var del []uint32
	for _, m := range news {
		if s.r.Float() < a.read {
			if err := ic.Fetch(ctx, true, strconv.FormatUint(uint64(m.uid), 10), "(UID BODY[])", nil); err != nil {
				return err
			}
		}
		if a.reply > 0 && m.from != "" && s.r.Float() < a.reply {
			if err := s.reply(ctx, m.from); err != nil {
				return err
			}
		}
		switch u := s.r.Float(); {
		case u < a.move && len(s.c.pop.extra) > 0:
			dest := s.c.pop.extra[s.r.Intn(len(s.c.pop.extra))]
			if err := ic.Move(ctx, strconv.FormatUint(uint64(m.uid), 10), dest); err != nil {
				return err
			}
		case u < a.move+a.del:
			del = append(del, m.uid)
		}
		s.processed = max(s.processed, m.uid)
	}
	if len(del) > 0 {
		return ic.Remove(ctx, imapclient.UIDSet(del))
	}
	return nil
}

// doBrowse is LoadSim's "browse mail": list the folders (an online client;
// a cached one knows them), open one, fetch a page of its headers, read
// one message.
func doBrowse(ctx context.Context, s *session, a *action) error {
	ic := s.ic
	if s.folders == nil || s.c.Mode == Online {
		names, err := ic.List(ctx)
		if err != nil {
			return err
		}
		if s.c.Mode == Cached {
			s.folders = names
		}
	}
	folder := a.folder
	if folder == "any" {
		all := s.c.pop.folders
		folder = all[s.r.Intn(len(all))].name
	}
	if ic.Mailbox != folder {
		if err := ic.Select(ctx, folder, false, s.c.Mode == Cached); err != nil {
			return err
		}
	}
	if ic.Exists > 0 {
		from := max(1, int(ic.Exists)-a.page+1)
		if err := s.fetchHeaders(ctx, false, strconv.Itoa(from)+":*", nil); err != nil {
			return err
		}
		seq := from + s.r.Intn(int(ic.Exists)-from+1)
		if err := ic.Fetch(ctx, false, strconv.Itoa(seq), "(UID BODY[])", nil); err != nil {
			return err
		}
	}
	if s.c.Mode == Cached && folder != Inbox {
		return s.ensureInbox(ctx)
	}
	return nil
}

// doSearch is the Domino study's full-text search of the Inbox: UID SEARCH
// TEXT.
// With a population codename as the needle (the default), every populated
// INBOX message naming it must be found (they are never moved: processing
// handles new mail only), or the search counts as corrupt.
func doSearch(ctx context.Context, s *session, a *action) error {
	ic := s.ic
	folder := a.folder
	if folder == Inbox {
		if err := s.ensureInbox(ctx); err != nil {
			return err
		}
	} else if ic.Mailbox != folder {
		if err := ic.Select(ctx, folder, true, false); err != nil {
			return err
		}
	}
	needle, tag := a.text, -1
	if needle == "" {
		tag = s.r.Intn(len(msggen.Codenames))
		needle = msggen.Codenames[tag]
	}
	uids, err := ic.Search(ctx, []byte(`TEXT "`+needle+`"`))
	if err != nil {
		return err
	}
	if a.verify && tag >= 0 && s.c.popSeed.Load() != nil {
		if want := s.tagCount(tag); len(uids) < want {
			return driver.Errorf(driver.Corrupt, fmt.Errorf("SEARCH TEXT %q found %d messages, but %d populated INBOX messages hold it",
				needle, len(uids), want))
		}
	}
	if folder != Inbox {
		return s.ensureInbox(ctx)
	}
	return nil
}

// tagCount is the number of populated INBOX messages naming codename tag.
func (s *session) tagCount(tag int) int {
	if s.tagCounts == nil {
		var n [len(msggen.Codenames)]int32
		seed := *s.c.popSeed.Load()
		for j := range s.c.pop.inboxCount() {
			r := msggen.NewRNG(msgSeed(seed, s.id, 0, j))
			n[r.Intn(len(msggen.Codenames))]++
		}
		s.tagCounts = &n
	}
	return int(s.tagCounts[tag])
}

// doCheck is the online client's poll for new mail: NOOP on the INBOX and
// the marks of what arrived.
func doCheck(ctx context.Context, s *session, _ *action) error {
	if err := s.ensureInbox(ctx); err != nil {
		return err
	}
	if err := s.ic.Noop(ctx); err != nil {
		return err
	}
	return s.checkNew(ctx, time.Now(), nil)
}

// addressOf extracts the address of a From header: the part in <>, or
// the whole value.
func addressOf(v []byte) string {
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] == '<' {
			for j := i + 1; j < len(v); j++ {
				if v[j] == '>' {
					return string(v[i+1 : j])
				}
			}
		}
	}
	if len(v) > 0 && !containsByte(v, ' ') {
		return string(v)
	}
	return ""
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}
