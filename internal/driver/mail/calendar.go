package mail

import (
	"context"
	"errors"
	"strconv"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/caldav"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

// errNoCalDAV is the skip of calendar actions without a CalDAV server:
// counted as class skipped, never silently dropped.
var errNoCalDAV = driver.Errorf(driver.Skipped, errors.New("no CalDAV server configured (mail.caldav): calendar action skipped"))

func davUID(user, kind string, i int) string { return user + "-" + kind + "-" + strconv.Itoa(i) }

func (s *session) davDone(res caldav.Result) {
	s.bytesIn += res.In
	s.bytesOut += res.Out
}

// doCreateAppointment stores a new event in the user's calendar.
func doCreateAppointment(ctx context.Context, s *session, _ *action) error {
	if s.c.dav == nil {
		return errNoCalDAV
	}
	s.sent++
	user := s.c.UserName(s.id)
	uid := davUID(user, "new", int(s.sent))
	r := msggen.NewRNG(msggen.Mix(s.r.Next(), 0x617070))
	res, err := s.c.dav.Put(ctx, user, s.c.password, caldav.CalPath(user)+uid+".ics", "text/calendar; charset=utf-8",
		msggen.AppendEvent(nil, r, uid, "", nil, ""))
	s.davDone(res)
	return err
}

// doBrowseCalendar reads the events of a window of days (calendar-query
// with a time-range).
func doBrowseCalendar(ctx context.Context, s *session, a *action) error {
	if s.c.dav == nil {
		return errNoCalDAV
	}
	start := msggen.PopDate.AddDate(0, 0, s.r.Intn(msggen.CalSpan))
	user := s.c.UserName(s.id)
	res, err := s.c.dav.TimeRange(ctx, user, s.c.password, start, start.AddDate(0, 0, a.days))
	s.davDone(res)
	return err
}

// doFreeBusy asks for the user's busy time over a window of days.
func doFreeBusy(ctx context.Context, s *session, a *action) error {
	if s.c.dav == nil {
		return errNoCalDAV
	}
	start := msggen.PopDate.AddDate(0, 0, s.r.Intn(msggen.CalSpan))
	user := s.c.UserName(s.id)
	res, err := s.c.dav.FreeBusy(ctx, user, s.c.password, start, start.AddDate(0, 0, a.days))
	s.davDone(res)
	return err
}

// doMeetingRequest stores a meeting with attendees on the organiser's
// calendar and sends them the iTIP invitation (METHOD:REQUEST) by mail.
func doMeetingRequest(ctx context.Context, s *session, a *action) error {
	if s.c.dav == nil {
		return errNoCalDAV
	}
	n := s.c.track.totalUsers()
	if n < 2 {
		return driver.Errorf(driver.Other, errors.New("a meeting needs at least 2 users"))
	}
	m := &outMsg{}
	seen := map[int]bool{s.id: true}
	for range min(a.attendees, n-1) {
		u := s.r.Intn(n)
		for seen[u] {
			u = (u + 1) % n
		}
		seen[u] = true
		m.rcpts = append(m.rcpts, s.c.Address(u))
	}
	s.sent++
	user := s.c.UserName(s.id)
	uid := davUID(user, "mtg", int(s.sent))
	r := msggen.NewRNG(msggen.Mix(s.r.Next(), 0x6d7467))
	ev := msggen.AppendEvent(nil, r, uid, s.c.Address(s.id), m.rcpts, "")
	res, err := s.c.dav.Put(ctx, user, s.c.password, caldav.CalPath(user)+uid+".ics", "text/calendar; charset=utf-8", ev)
	s.davDone(res)
	if err != nil {
		return err
	}
	invite := msggen.AppendEvent(nil, msggen.NewRNG(msggen.Mix(s.r.Next(), 0x6d7467)), uid, s.c.Address(s.id), m.rcpts, "REQUEST")
	m.spec = msggen.Spec{Size: len(invite) + 1200, To: m.rcpts, Subject: "Invitation: meeting", Invite: invite}
	return s.submit(ctx, m)
}
