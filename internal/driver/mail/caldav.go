package mail

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

// davClient is a small CalDAV client (RFC 4791 over WebDAV): the few
// requests the calendar actions need, with Basic authentication. One
// client (one connection pool) serves every user.
type davClient struct {
	base *url.URL
	hc   *http.Client
}

func newDAVClient(base *url.URL, timeout time.Duration, insecure bool) *davClient {
	d := &net.Dialer{Timeout: timeout}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &davConn{Conn: c}, nil
		},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: insecure},
	}
	return &davClient{base: base, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

// davConn counts the bytes of a CalDAV connection, headers and TLS
// included. The transport reads and writes it from its own goroutines.
type davConn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *davConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *davConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

// davConnOf is the counting connection under a request's connection (TLS
// or not); nil if there is none.
func davConnOf(c net.Conn) *davConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	dc, _ := c.(*davConn)
	return dc
}

// davResult is what one request moved: in and out are the bytes on the
// wire (status line, headers, bodies; a new connection's TLS handshake).
type davResult struct {
	status  int
	in, out int64
	body    []byte // the answer's body, up to 64 KB
}

// do sends one request as user and reads the whole answer. Statuses from
// 400 up are errors of class auth (401, 403), 4xx or 5xx, with the
// server's text.
func (d *davClient) do(ctx context.Context, user, pass, method, path string, hdr map[string]string, body []byte) (davResult, error) {
	var res davResult
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
	var dc *davConn
	var in0, out0 int64
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if dc = davConnOf(i.Conn); dc != nil && i.Reused {
			in0, out0 = dc.in.Load(), dc.out.Load()
		}
	}}))
	wire := func() {
		if dc != nil {
			res.in, res.out = dc.in.Load()-in0, dc.out.Load()-out0
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
	res.status, res.body = resp.StatusCode, buf.Bytes()
	if err != nil {
		return res, driver.Errorf(driver.IO, fmt.Errorf("CalDAV %s: %w", method, err))
	}
	if resp.StatusCode >= 400 {
		e := fmt.Errorf("CalDAV %s %s: %s %s", method, path, resp.Status, driver.Clip(bytes.TrimSpace(res.body)))
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

// ping checks that the server answers HTTP at all (OPTIONS, no account).
func (d *davClient) ping(ctx context.Context) error {
	_, err := d.do(ctx, "", "", "OPTIONS", "/", nil, nil)
	if err != nil && driver.Classify(err) != driver.Auth && driver.Classify(err) != driver.Status4xx {
		return err
	}
	return nil
}

// calPath and cardPath are a user's calendar and address book.
func calPath(user string) string  { return "/" + user + "/calendar/" }
func cardPath(user string) string { return "/" + user + "/contacts/" }

const xmlType = "application/xml; charset=utf-8"

// resetCollections deletes and creates the user's calendar and, when
// contacts are wanted, address book (a fresh data set).
func (d *davClient) resetCollections(ctx context.Context, user, pass string, contacts bool) error {
	for _, p := range []string{calPath(user), cardPath(user)} {
		if _, err := d.do(ctx, user, pass, "DELETE", p, nil, nil); err != nil && driver.Classify(err) != driver.Status4xx {
			return err
		}
	}
	mk := `<?xml version="1.0" encoding="utf-8"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">` +
		`<D:set><D:prop><D:displayname>Calendar</D:displayname></D:prop></D:set></C:mkcalendar>`
	if _, err := d.do(ctx, user, pass, "MKCALENDAR", calPath(user), map[string]string{"Content-Type": xmlType}, []byte(mk)); err != nil {
		return err
	}
	if !contacts {
		return nil
	}
	mc := `<?xml version="1.0" encoding="utf-8"?><D:mkcol xmlns:D="DAV:" xmlns:CR="urn:ietf:params:xml:ns:carddav">` +
		`<D:set><D:prop><D:resourcetype><D:collection/><CR:addressbook/></D:resourcetype></D:prop></D:set></D:mkcol>`
	_, err := d.do(ctx, user, pass, "MKCOL", cardPath(user), map[string]string{"Content-Type": xmlType}, []byte(mc))
	return err
}

// put stores one calendar object or vCard.
func (d *davClient) put(ctx context.Context, user, pass, path, ctype string, body []byte) (davResult, error) {
	return d.do(ctx, user, pass, "PUT", path, map[string]string{"Content-Type": ctype}, body)
}

// timeRange is a REPORT calendar-query for the events between start and
// end (the calendar's data included): "browse calendar".
func (d *davClient) timeRange(ctx context.Context, user, pass string, start, end time.Time) (davResult, error) {
	q := `<?xml version="1.0" encoding="utf-8"?><C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">` +
		`<D:prop><D:getetag/><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">` +
		`<C:time-range start="` + icalTime(start) + `" end="` + icalTime(end) + `"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>`
	return d.report(ctx, user, pass, q)
}

// freeBusy is a REPORT free-busy-query (RFC 4791 section 7.10) on the
// user's calendar. (Radicale answers it with the matching events.)
func (d *davClient) freeBusy(ctx context.Context, user, pass string, start, end time.Time) (davResult, error) {
	q := `<?xml version="1.0" encoding="utf-8"?><C:free-busy-query xmlns:C="urn:ietf:params:xml:ns:caldav">` +
		`<C:time-range start="` + icalTime(start) + `" end="` + icalTime(end) + `"/></C:free-busy-query>`
	return d.report(ctx, user, pass, q)
}

func (d *davClient) report(ctx context.Context, user, pass, q string) (davResult, error) {
	res, err := d.do(ctx, user, pass, "REPORT", calPath(user), map[string]string{"Content-Type": xmlType, "Depth": "1"}, []byte(q))
	if err == nil && res.status != 207 && res.status != 200 {
		err = driver.Errorf(driver.Protocol, errors.New("CalDAV REPORT: status "+http.StatusText(res.status)))
	}
	return res, err
}

func icalTime(t time.Time) string { return t.UTC().Format("20060102T150405Z") }
