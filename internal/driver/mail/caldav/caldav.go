// Package caldav is the mail driver's small CalDAV client (RFC 4791 over
// WebDAV, and CardDAV's MKCOL): the few requests the calendar actions and
// the population need, with Basic authentication, each returning the
// bytes it moved on the wire. Errors are driver-classed: 401 and 403 are
// auth, other statuses from 400 up 4xx or 5xx with the server's text,
// transport failures by their network class.
package caldav

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// Client is a small CalDAV client (RFC 4791 over WebDAV): the few
// requests the calendar actions need, with Basic authentication. One
// client (one connection pool) serves every user.
type Client struct {
	base *url.URL
	hc   *http.Client
}

// New is a client of the server at base (its path prefixes every
// request's); timeout bounds each request, connection included; insecure
// skips the check of the server's certificate. Safe for concurrent use.
func New(base *url.URL, timeout time.Duration, insecure bool) *Client {
	d := &net.Dialer{Timeout: timeout}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &conn{Conn: c}, nil
		},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: insecure},
	}
	return &Client{base: base, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

// conn counts the bytes of a CalDAV connection, headers and TLS
// included. The transport reads and writes it from its own goroutines.
type conn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

// connOf is the counting connection under a request's connection (TLS
// or not); nil if there is none.
func connOf(c net.Conn) *conn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	dc, _ := c.(*conn)
	return dc
}

// Result is what one request moved: in and out are the bytes on the
// wire (status line, headers, bodies; a new connection's TLS handshake).
type Result struct {
	Status  int
	In, Out int64
	Body    []byte // the answer's body, up to 64 KB
}

// Do sends one request as user and reads the whole answer. Statuses from
// 400 up are errors of class auth (401, 403), 4xx or 5xx, with the
// server's text.
func (d *Client) Do(ctx context.Context, user, pass, method, path string, hdr map[string]string, body []byte) (Result, error) {
	var res Result
	u := *d.base
	u.Path = strings.TrimSuffix(d.base.Path, "/") + "/" + strings.TrimPrefix(path, "/")
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return res, driver.Errorf(driver.Other, err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// The request's bytes are what its connection moved from the moment it
	// was handed the connection (from its start, when new) until the
	// answer was read: HTTP/1.1 carries one request at a time.
	var dc *conn
	var in0, out0 int64
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if dc = connOf(i.Conn); dc != nil && i.Reused {
			in0, out0 = dc.in.Load(), dc.out.Load()
		}
	}}))
	wire := func() {
		if dc != nil {
			res.In, res.Out = dc.in.Load()-in0, dc.out.Load()-out0
		}
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		wire()
		c := driver.Classify(err)
		if c == driver.Other {
			c = driver.IO
		}
		return res, driver.Errorf(c, fmt.Errorf("CalDAV %s: %w", method, err))
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, io.LimitReader(resp.Body, 64<<10))
	io.Copy(io.Discard, resp.Body)
	wire()
	res.Status, res.Body = resp.StatusCode, buf.Bytes()
	if err != nil {
		return res, driver.Errorf(driver.IO, fmt.Errorf("CalDAV %s: %w", method, err))
	}
	if resp.StatusCode >= 400 {
		e := fmt.Errorf("CalDAV %s %s: %s %s", method, path, resp.Status, driver.Clip(bytes.TrimSpace(res.Body)))
		switch {
		case resp.StatusCode == 401 || resp.StatusCode == 403:
			return res, driver.Errorf(driver.Auth, e)
		case resp.StatusCode >= 500:
			return res, driver.Errorf(driver.Status5xx, e)
		}
		return res, driver.Errorf(driver.Status4xx, e)
	}
	return res, nil
}

// Ping checks that the server answers HTTP at all (OPTIONS, no account).
func (d *Client) Ping(ctx context.Context) error {
	_, err := d.Do(ctx, "", "", "OPTIONS", "/", nil, nil)
	if err != nil && driver.Classify(err) != driver.Auth && driver.Classify(err) != driver.Status4xx {
		return err
	}
	return nil
}

// CalPath and CardPath are a user's calendar and address book.
func CalPath(user string) string  { return "/" + user + "/calendar/" }
func CardPath(user string) string { return "/" + user + "/contacts/" }

const xmlType = "application/xml; charset=utf-8"

// ResetCollections deletes and creates the user's calendar and, when
// contacts are wanted, address book (a fresh data set).
func (d *Client) ResetCollections(ctx context.Context, user, pass string, contacts bool) error {
	for _, p := range []string{CalPath(user), CardPath(user)} {
		if _, err := d.Do(ctx, user, pass, "DELETE", p, nil, nil); err != nil && driver.Classify(err) != driver.Status4xx {
			return err
		}
	}
	mk := `<?xml version="1.0" encoding="utf-8"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">` +
		`<D:set><D:prop><D:displayname>Calendar</D:displayname></D:prop></D:set></C:mkcalendar>`
	if _, err := d.Do(ctx, user, pass, "MKCALENDAR", CalPath(user), map[string]string{"Content-Type": xmlType}, []byte(mk)); err != nil {
		return err
	}
	if !contacts {
		return nil
	}
	mc := `<?xml version="1.0" encoding="utf-8"?><D:mkcol xmlns:D="DAV:" xmlns:CR="urn:ietf:params:xml:ns:carddav">` +
		`<D:set><D:prop><D:resourcetype><D:collection/><CR:addressbook/></D:resourcetype></D:prop></D:set></D:mkcol>`
	_, err := d.Do(ctx, user, pass, "MKCOL", CardPath(user), map[string]string{"Content-Type": xmlType}, []byte(mc))
	return err
}

// Put stores one calendar object or vCard.
func (d *Client) Put(ctx context.Context, user, pass, path, ctype string, body []byte) (Result, error) {
	return d.Do(ctx, user, pass, "PUT", path, map[string]string{"Content-Type": ctype}, body)
}

// TimeRange is a REPORT calendar-query for the events between start and
// end (the calendar's data included): "browse calendar".
func (d *Client) TimeRange(ctx context.Context, user, pass string, start, end time.Time) (Result, error) {
	q := `<?xml version="1.0" encoding="utf-8"?><C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">` +
		`<D:prop><D:getetag/><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">` +
		`<C:time-range start="` + ICalTime(start) + `" end="` + ICalTime(end) + `"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>`
	return d.report(ctx, user, pass, q)
}

// FreeBusy is a REPORT free-busy-query (RFC 4791 section 7.10) on the
// user's calendar. (Radicale answers it with the matching events.)
func (d *Client) FreeBusy(ctx context.Context, user, pass string, start, end time.Time) (Result, error) {
	q := `<?xml version="1.0" encoding="utf-8"?><C:free-busy-query xmlns:C="urn:ietf:params:xml:ns:caldav">` +
		`<C:time-range start="` + ICalTime(start) + `" end="` + ICalTime(end) + `"/></C:free-busy-query>`
	return d.report(ctx, user, pass, q)
}

// report is one REPORT on the user's calendar; a status other than 207 or
// 200 is class protocol.
func (d *Client) report(ctx context.Context, user, pass, q string) (Result, error) {
	res, err := d.Do(ctx, user, pass, "REPORT", CalPath(user), map[string]string{"Content-Type": xmlType, "Depth": "1"}, []byte(q))
	if err == nil && res.Status != 207 && res.Status != 200 {
		err = driver.Errorf(driver.Protocol, errors.New("CalDAV REPORT: status "+http.StatusText(res.Status)))
	}
	return res, err
}

// ICalTime is t as iCalendar's UTC date-time (RFC 5545 3.3.5).
func ICalTime(t time.Time) string { return t.UTC().Format("20060102T150405Z") }
