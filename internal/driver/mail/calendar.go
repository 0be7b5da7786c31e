package mail

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/caldav"
)

// errNoCalDAV is the skip of calendar actions without a CalDAV server:
// counted as class skipped, never silently dropped.
var errNoCalDAV = driver.Errorf(driver.Skipped, errors.New("no CalDAV server configured (mail.caldav): calendar action skipped"))

// calSpan is the span of days the calendar entries fall in, from popDate.
const calSpan = 28

// appendEvent appends an iCalendar object with one event: a meeting of
// 30 minutes to 2 hours on a working day within calSpan days of popDate,
// with an organizer and attendees when given.
func appendEvent(b []byte, r *rng, uid, organizer string, attendees []string, method string) []byte {
	day := popDate.AddDate(0, 0, r.intn(calSpan))
	start := day.Add(time.Duration(r.intn(18)) * 30 * time.Minute)
	end := start.Add(time.Duration(1+r.intn(4)) * 30 * time.Minute)
	b = append(b, "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//throng//mail//EN\r\n"...)
	if method != "" {
		b = append(b, "METHOD:"+method+"\r\n"...)
	}
	b = append(b, "BEGIN:VEVENT\r\nUID:"+uid+"\r\nDTSTAMP:"+caldav.ICalTime(popDate)+"\r\nDTSTART:"+caldav.ICalTime(start)+
		"\r\nDTEND:"+caldav.ICalTime(end)+"\r\nSUMMARY:"...)
	b = appendSubject(b, r)
	b = append(b, "\r\nLOCATION:Room "...)
	b = strconv.AppendInt(b, int64(100+r.intn(400)), 10)
	b = append(b, "\r\nDESCRIPTION:"...)
	for i := range 8 + r.intn(20) {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, r.word()...)
	}
	b = append(b, "\r\n"...)
	if organizer != "" {
		b = append(b, "ORGANIZER:mailto:"+organizer+"\r\n"...)
		for _, a := range attendees {
			b = append(b, "ATTENDEE;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:"+a+"\r\n"...)
		}
	}
	return append(b, "END:VEVENT\r\nEND:VCALENDAR\r\n"...)
}

// appendCard appends a vCard 3.0 contact.
func appendCard(b []byte, r *rng, uid, domain string) []byte {
	b = append(b, "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:"+uid+"\r\nFN:"...)
	name := appendName(nil, r)
	b = append(b, name...)
	b = append(b, "\r\nEMAIL;TYPE=INTERNET:"...)
	b = append(b, r.word()...)
	b = append(b, '.')
	b = append(b, r.word()...)
	b = append(b, "@"+domain+"\r\nTEL;TYPE=WORK:+1 555 "...)
	b = strconv.AppendInt(b, int64(1000000+r.intn(8999999)), 10)
	b = append(b, "\r\nORG:"...)
	b = append(b, r.word()...)
	return append(b, "\r\nEND:VCARD\r\n"...)
}

// davUID names the i-th object a user creates (kind "pop", "new", "mtg").
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
	r := newRNG(mix(s.r.next(), 0x617070))
	res, err := s.c.dav.Put(ctx, user, s.c.password, caldav.CalPath(user)+uid+".ics", "text/calendar; charset=utf-8",
		appendEvent(nil, r, uid, "", nil, ""))
	s.davDone(res)
	return err
}

// doBrowseCalendar reads the events of a window of days (calendar-query
// with a time-range).
func doBrowseCalendar(ctx context.Context, s *session, a *action) error {
	if s.c.dav == nil {
		return errNoCalDAV
	}
	start := popDate.AddDate(0, 0, s.r.intn(calSpan))
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
	start := popDate.AddDate(0, 0, s.r.intn(calSpan))
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
		u := s.r.intn(n)
		for seen[u] {
			u = (u + 1) % n
		}
		seen[u] = true
		m.rcpts = append(m.rcpts, s.c.Address(u))
	}
	s.sent++
	user := s.c.UserName(s.id)
	uid := davUID(user, "mtg", int(s.sent))
	r := newRNG(mix(s.r.next(), 0x6d7467))
	ev := appendEvent(nil, r, uid, s.c.Address(s.id), m.rcpts, "")
	res, err := s.c.dav.Put(ctx, user, s.c.password, caldav.CalPath(user)+uid+".ics", "text/calendar; charset=utf-8", ev)
	s.davDone(res)
	if err != nil {
		return err
	}
	invite := appendEvent(nil, newRNG(mix(s.r.next(), 0x6d7467)), uid, s.c.Address(s.id), m.rcpts, "REQUEST")
	m.spec = msgSpec{size: len(invite) + 1200, to: m.rcpts, subject: "Invitation: meeting", invite: invite}
	return s.submit(ctx, m)
}
