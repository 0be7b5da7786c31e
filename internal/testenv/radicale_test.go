package testenv

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Radicale serves its users' calendars: MKCALENDAR and PUT work with the
// password, a wrong password is 401 and another user's calendar 403.
func TestRadicaleCalendars(t *testing.T) {
	t.Parallel()
	r := Radicale(t, RadicaleOptions{Users: 2})
	client := &http.Client{Timeout: 5 * time.Second}
	do := func(method, path, user, pass, body string) int {
		req, _ := http.NewRequest(method, r.URL+path, strings.NewReader(body))
		req.SetBasicAuth(user, pass)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do("MKCALENDAR", "/user0001/calendar/", "user0001", r.Password, ""); got != 201 {
		t.Fatalf("MKCALENDAR: %d", got)
	}
	ev := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:e1\r\nDTSTAMP:20260101T000000Z\r\n" +
		"DTSTART:20260301T100000Z\r\nDTEND:20260301T110000Z\r\nSUMMARY:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	if got := do("PUT", "/user0001/calendar/e1.ics", "user0001", r.Password, ev); got != 201 {
		t.Fatalf("PUT: %d", got)
	}
	if got := do("PROPFIND", "/user0001/", "user0001", "wrong", ""); got != 401 {
		t.Errorf("wrong password: %d", got)
	}
	if got := do("PROPFIND", "/user0001/calendar/", "user0002", r.Password, ""); got != 403 {
		t.Errorf("another user's calendar: %d", got)
	}
}
