package smtpclient

import (
	"errors"
	"fmt"

	"github.com/emersion/go-smtp"

	"github.com/throng-io/throng/internal/driver"
)

// smtpErr classifies an SMTP failure at stage: a refusal (an
// *smtp.SMTPError, see replyError) of 535, 534 or 530 is auth, other 5xx
// and 4xx replies their status class; the rest is classed by the network
// error (io when it has no class of its own).
func smtpErr(stage string, err error) error {
	var se *smtp.SMTPError
	code, msg := 0, ""
	switch {
	case errors.As(err, &se):
		code, msg = se.Code, se.Message
		if ec := se.EnhancedCode; ec[0] > 0 {
			msg = fmt.Sprintf("%d.%d.%d %s", ec[0], ec[1], ec[2], msg)
		}
	default:
		c := driver.Classify(err)
		if c == driver.Other {
			c = driver.IO
		}
		return driver.Errorf(c, fmt.Errorf("SMTP %s: %w", stage, err))
	}
	e := fmt.Errorf("SMTP %s: %d %s", stage, code, driver.Clip([]byte(msg)))
	switch {
	case code == 535 || code == 530 || code == 534:
		return driver.Errorf(driver.Auth, e)
	case code >= 500:
		return driver.Errorf(driver.Status5xx, e)
	case code >= 400:
		return driver.Errorf(driver.Status4xx, e)
	}
	return driver.Errorf(driver.Protocol, e)
}
