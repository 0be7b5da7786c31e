package msggen

import (
	"strconv"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/caldav"
)

// CalSpan is the span of days the calendar entries fall in, from PopDate.
const CalSpan = 28

// AppendEvent appends an iCalendar object with one event: a meeting of
// 30 minutes to 2 hours on a working day within CalSpan days of PopDate,
// with an organizer and attendees when given.
func AppendEvent(b []byte, r *RNG, uid, organizer string, attendees []string, method string) []byte {
	day := PopDate.AddDate(0, 0, r.Intn(CalSpan))
	start := day.Add(time.Duration(r.Intn(18)) * 30 * time.Minute)
	end := start.Add(time.Duration(1+r.Intn(4)) * 30 * time.Minute)
	b = append(b, "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//throng//mail//EN\r\n"...)
	if method != "" {
		b = append(b, "METHOD:"+method+"\r\n"...)
	}
	b = append(b, "BEGIN:VEVENT\r\nUID:"+uid+"\r\nDTSTAMP:"+caldav.ICalTime(PopDate)+"\r\nDTSTART:"+caldav.ICalTime(start)+
		"\r\nDTEND:"+caldav.ICalTime(end)+"\r\nSUMMARY:"...)
	b = appendSubject(b, r)
	b = append(b, "\r\nLOCATION:Room "...)
	b = strconv.AppendInt(b, int64(100+r.Intn(400)), 10)
	b = append(b, "\r\nDESCRIPTION:"...)
	for i := range 8 + r.Intn(20) {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, r.Word()...)
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

// AppendCard appends a vCard 3.0 contact.
func AppendCard(b []byte, r *RNG, uid, domain string) []byte {
	b = append(b, "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:"+uid+"\r\nFN:"...)
	name := appendName(nil, r)
	b = append(b, name...)
	b = append(b, "\r\nEMAIL;TYPE=INTERNET:"...)
	b = append(b, r.Word()...)
	b = append(b, '.')
	b = append(b, r.Word()...)
	b = append(b, "@"+domain+"\r\nTEL;TYPE=WORK:+1 555 "...)
	b = strconv.AppendInt(b, int64(1000000+r.Intn(8999999)), 10)
	b = append(b, "\r\nORG:"...)
	b = append(b, r.Word()...)
	return append(b, "\r\nEND:VCARD\r\n"...)
}

// davUID names the i-th object a user creates (kind "pop", "new", "mtg").
