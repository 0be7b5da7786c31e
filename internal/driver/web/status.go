package web

import "github.com/throng-io/throng/internal/driver"

// statusClass is the class of a final response's status code, for every
// executor and protocol: 2xx and 3xx OK (a static storm does not follow
// redirects), 4xx, 5xx, anything else a protocol error.
func statusClass(status int) driver.Class {
	switch {
	case status >= 200 && status < 400:
		return driver.OK
	case status >= 400 && status < 500:
		return driver.Status4xx
	case status >= 500 && status < 600:
		return driver.Status5xx
	}
	return driver.Protocol
}

// WireStatus implements driver.WireH2: the class of an HTTP/2 response's
// status and its sample error, by the same table as HTTP/1.1's.
func (c *Config) WireStatus(status int) (driver.Class, error) {
	class := statusClass(status)
	if class == driver.OK {
		return class, nil
	}
	return class, statusError(status, class)
}

// statusErr is the sample error of a response whose class is not OK: its
// status ("HTTP status 503"), or a malformed response.
type statusErr struct {
	status int
	class  driver.Class
}

func (e statusErr) Error() string {
	if e.class == driver.Protocol {
		if e.status == 0 {
			return "malformed HTTP response"
		}
		return "malformed HTTP response (status " + itoa(e.status) + ")"
	}
	return "HTTP status " + itoa(e.status)
}

// statusErrs are the sample errors of the status codes a response may
// carry, made once: a failed response costs neither executor (the
// session, the engine's event loops through WireError) an allocation.
// Never written after.
var statusErrs = func() (t [600]error) {
	for code := range t {
		t[code] = statusErr{status: code}
	}
	return t
}()

// errMalformed is the sample error of a malformed response.
var errMalformed error = statusErr{class: driver.Protocol}

// statusError is the sample error of a response of class class (not OK)
// and status status (0: none read).
func statusError(status int, class driver.Class) error {
	switch {
	case class == driver.Protocol && status == 0:
		return errMalformed
	case class != driver.Protocol && status >= 0 && status < len(statusErrs):
		return statusErrs[status]
	}
	return statusErr{status, class}
}

// WireError implements driver.WireErrorer: the completed response's sample
// error, without allocating (a malformed response's status is left out).
func (p *Parser) WireError() error {
	if p.class == driver.OK {
		return nil
	}
	if p.class == driver.Protocol {
		return errMalformed
	}
	return statusError(p.status, p.class)
}

var _ driver.WireErrorer = (*Parser)(nil)
