// Package mail is the mail workload family: simulated mail users over IMAP
// (log on, process the inbox, browse, search, wait for new mail), SMTP
// submission (send to users and distribution lists) and CalDAV (calendar
// entries, free/busy, meeting requests), after a mailbox population created
// fresh before every run. It reproduces the user profiles of the Exchange
// study (LoadSim) and the Domino study (Server.Load) on open protocols
// (docs/studies.md).
//
// The IMAP client is throng's own (imapconn.go): a logged-on user between
// actions holds a socket and a few hundred bytes, no goroutine and no
// buffer, so one generator can hold ten thousand of them. SMTP goes
// through throng's own small client (package smtpclient: one state
// machine fed by the sender's goroutine, or, plain SMTP on Linux, by one
// epoll loop for every sender, which the Config owns); CalDAV through a
// small WebDAV client (package caldav).
//
// Every message the users send carries a marker header; the recipients'
// sessions report when they see it (IDLE or polling), which gives the
// delivery latency from SMTP accept to visibility in IMAP; after the run,
// Drain looks for what is still missing and counts it lost (the Events
// ability, event "deliver").
package mail

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/caldav"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
	"github.com/throng-io/throng/internal/driver/mail/smtpclient"
	"github.com/throng-io/throng/internal/rawsock"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/secret"
)

// Name is the family's name: its scenario block is "mail:".
const Name = "mail"

// Modes of the simulated client.
const (
	// Online: an always-connected client without a local copy: it reads
	// the mailbox view from the server at every log-on and polls for new
	// mail (the "check" action).
	Online = "online"
	// Cached: a client that keeps a local copy and synchronises: it
	// remembers UIDVALIDITY/UIDNEXT (and HIGHESTMODSEQ with CONDSTORE),
	// fetches only what changed, and waits for new mail with IDLE.
	Cached = "cached"
)

// Defaults.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultDomain   = msggen.DefaultDomain
	DefaultFormat   = "user%04d"
	DefaultPassword = "throng"
	// PasswordEnv is read for the password when the block sets none.
	PasswordEnv = "MAIL_PASSWORD"
)

// Settings is the scenario's "mail:" block.
type Settings struct {
	// SMTP is the host:port of SMTP submission; default: the target URL's
	// smtp= parameter.
	SMTP string `yaml:"smtp"`
	// SMTPAuth authenticates SMTP submissions (AUTH PLAIN, the user's
	// credentials). Default false (the loopback servers relay for
	// 127.0.0.0/8).
	SMTPAuth bool `yaml:"smtp_auth"`
	// SMTPTLS is how submission is encrypted: "none" (default; "tls" with
	// an smtps:// target), "starttls" (RFC 3207: plain connection, then
	// STARTTLS, which the server must offer; port 587's way) or "tls"
	// (implicit TLS from the first byte, RFC 8314: port 465's way).
	// Certificates are checked unless insecure_skip_verify.
	SMTPTLS string `yaml:"smtp_tls"`
	// SMTPEngine is how submissions do their I/O: "epoll" (one event loop
	// for every transaction in flight, raw system calls; default on Linux
	// with smtp_tls none) or "goroutines" (each sender on its own
	// connection in Go's poller; the only way with TLS).
	SMTPEngine string `yaml:"smtp_engine"`
	// CalDAV is the CalDAV server's base URL (http://127.0.0.1:15232/);
	// default: the target URL's caldav= parameter. Without one, calendar
	// actions are counted as skipped.
	CalDAV string `yaml:"caldav"`
	// Domain is the mail domain of the users (default example.test).
	Domain string `yaml:"domain"`
	// UserFormat names user number N (default "user%04d": user0001...).
	UserFormat string `yaml:"user_format"`
	// FirstUser is the number of the first user (default 1).
	FirstUser int `yaml:"first_user"`
	// Password is every user's password; it may hold ${NAME} (an
	// environment variable) or ${file:PATH}. Default: $MAIL_PASSWORD when
	// set, else "throng" (the embedded server's users).
	Password string `yaml:"password"`
	// Auth is the IMAP log-on: "login" (LOGIN, default) or "plain"
	// (AUTHENTICATE PLAIN).
	Auth string `yaml:"auth"`
	// Mode is "online" (default) or "cached"; see the constants.
	Mode string `yaml:"mode"`
	// Idle makes sessions wait for new mail with IDLE between actions;
	// default true in cached mode, false in online mode.
	Idle *bool `yaml:"idle"`
	// Page is how many message headers one screen shows (default 20).
	Page int `yaml:"page"`
	// Timeout bounds one network exchange (connect, one command and its
	// answer, one SMTP transaction). Default 30s.
	Timeout scenario.Duration `yaml:"timeout"`
	// InsecureSkipVerify accepts any TLS certificate (imaps://, smtp_tls).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	// Population is the data set created before every run.
	Population Population `yaml:"population"`
	// Lists are the distribution lists, expanded by the server.
	Lists Lists `yaml:"lists"`
}

// Config is a decoded "mail:" block bound to a target. It implements
// driver.Config, driver.Events and driver.Describer.
type Config struct {
	Settings
	block    scenario.Node
	imapAddr string
	// submitOnly: an smtp:// target, a mail server measured as an MTA
	// alone: no IMAP server, so no log-on, no population (unless written
	// as maildir files) and no delivery tracking; only send actions (and
	// calendar ones, which need CalDAV, not IMAP).
	submitOnly bool
	tls        bool
	host       string
	tlsCfg     *tls.Config
	smtpAddr   string
	smtpTLSCfg *tls.Config // smtp_tls starttls or tls (nil: none)
	smtpSAOnce sync.Once
	smtpSA     *rawsock.Addr // smtpAddr for the submission loop, resolved at the first send
	smtpSAErr  error
	// smtpLoop is the submission loop (smtp_engine epoll) this Config
	// owns: started at the first send, closed when the repetition ends
	// (Drain), or by the Config's user outside the engine (closeSMTP).
	smtpMu   sync.Mutex
	smtpLoop *smtpclient.Loop
	caldav   *url.URL
	password string
	idle     bool
	// Provisioner, when set (the embedded server in this process, found
	// by Family's Decode on its target), creates the users and lists that
	// Prepare needs. Real servers get theirs from testenv or their
	// administrator.
	Provisioner Provisioner

	pop   *popPlan
	track *tracker
	// listsCache is the lists resolved for the run's users (see lists).
	listsMu    sync.Mutex
	listsCache atomic.Pointer[listSet]
	popStats   PopulationStats
	popSeed    atomic.Pointer[uint64] // the seed of the population in place (nil: none known)
	dav        *caldav.Client
	popLogOut  func(string) // where Prepare reports its rate (default stderr)
	targetErr  error        // a target this driver cannot use (see Decode)
}

// Provisioner creates accounts and distribution lists on a server that
// lets throng write its user database (the embedded server): the driver's
// Target ability (driver.Provisioner), found by Family's Decode.
type Provisioner = driver.Provisioner

var (
	_ driver.Config      = (*Config)(nil)
	_ driver.Events      = (*Config)(nil)
	_ driver.Describer   = (*Config)(nil)
	_ driver.Preflighter = (*Config)(nil)
)

// Decode reads a scenario's "mail:" block (zero: defaults) for a target
// URL: imap://host:port or imaps://host:port, optionally with
// ?smtp=host:port&caldav=URL, or smtp://host:port or smtps://host:port
// (submission only, optionally with ?caldav=URL). Every problem is
// returned, positioned.
func Decode(block scenario.Node, target string) (*Config, []error) {
	c := &Config{Settings: defaultSettings(), block: block}
	errs := block.Decode(&c.Settings)
	u, err := url.Parse(target)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("target %q: %v", target, err))
	case (u.Scheme == "smtp" || u.Scheme == "smtps") && u.Hostname() != "" && u.User == nil:
		c.submitOnly = true
		c.host = u.Hostname()
		port := u.Port()
		if port == "" {
			port = map[bool]string{false: "25", true: "465"}[u.Scheme == "smtps"]
		}
		if u.Scheme == "smtps" && c.SMTPTLS == "" {
			c.SMTPTLS = smtpImplicitTLS
		}
		if c.SMTP == "" {
			c.SMTP = net.JoinHostPort(c.host, port)
		}
		q := u.Query()
		if c.CalDAV == "" {
			c.CalDAV = q.Get("caldav")
		}
		for k := range q {
			if k != "caldav" {
				errs = append(errs, fmt.Errorf("target %q: unknown parameter %q (known: caldav)", target, k))
			}
		}
		var given struct {
			Population scenario.Node `yaml:"population"`
			Rest       scenario.Node `yaml:",rest"`
		}
		block.Decode(&given)
		if !given.Population.IsZero() && c.Population.Create && c.Population.Maildir == "" {
			errs = append(errs, block.Errorf("population", "an smtp:// target only submits: the population needs an IMAP server (imap://...?smtp=...) or population.maildir"))
		}
		if given.Population.IsZero() {
			c.Population.Create = false
		}
	case u.Scheme != "imap" && u.Scheme != "imaps" && u.Scheme != "smtp" && u.Scheme != "smtps":
		// Reported by Preflight and Open rather than here, so that a
		// scenario compiles against a placeholder target (the presets'
		// compile test gives every family http://127.0.0.1:9).
		c.targetErr = fmt.Errorf("target %q: the mail driver needs an imap:// or imaps:// URL, like imap://127.0.0.1:10143?smtp=127.0.0.1:10025, or smtp://host:port (smtps://host:port) to submit only", target)
	case u.Hostname() == "":
		errs = append(errs, fmt.Errorf("target %q has no host", target))
	case u.User != nil:
		errs = append(errs, fmt.Errorf("target %s holds credentials: set mail.password to ${%s} or ${file:PATH}", u.Redacted(), PasswordEnv))
	default:
		c.tls = u.Scheme == "imaps"
		port := u.Port()
		if port == "" {
			port = map[bool]string{false: "143", true: "993"}[c.tls]
		}
		c.host = u.Hostname()
		c.imapAddr = net.JoinHostPort(c.host, port)
		q := u.Query()
		if c.SMTP == "" {
			c.SMTP = q.Get("smtp")
		}
		if c.CalDAV == "" {
			c.CalDAV = q.Get("caldav")
		}
		for k := range q {
			if k != "smtp" && k != "caldav" {
				errs = append(errs, fmt.Errorf("target %q: unknown parameter %q (known: smtp, caldav)", target, k))
			}
		}
	}
	c.tlsCfg = &tls.Config{ServerName: c.host, InsecureSkipVerify: c.InsecureSkipVerify}
	errs = append(errs, c.Validate()...)
	if len(errs) == 0 {
		c.pop = newPopPlan(&c.Settings)
		c.track = newTracker(c)
		if c.caldav != nil {
			c.dav = caldav.New(c.caldav, c.Timeout.D(), c.InsecureSkipVerify)
		}
	}
	return c, errs
}

func defaultSettings() Settings {
	return Settings{
		Domain: DefaultDomain, UserFormat: DefaultFormat, FirstUser: 1,
		Auth: "login", Mode: Online, Page: 20, Timeout: scenario.Duration(DefaultTimeout),
		Population: defaultPopulation(), Lists: Lists{Format: "list%03d"},
	}
}

// Validate implements driver.Config.
func (c *Config) Validate() []error {
	var errs []error
	b := c.block
	if c.Timeout <= 0 {
		errs = append(errs, b.Errorf("timeout", "timeout must be greater than 0"))
	}
	switch c.Mode {
	case Online, Cached:
	default:
		errs = append(errs, b.Errorf("mode", "mode %q: want online or cached", c.Mode))
	}
	c.idle = c.Mode == Cached
	if c.Idle != nil {
		c.idle = *c.Idle
	}
	if c.Auth != "login" && c.Auth != "plain" {
		errs = append(errs, b.Errorf("auth", "auth %q: want login or plain", c.Auth))
	}
	if c.Page < 1 || c.Page > 1000 {
		errs = append(errs, b.Errorf("page", "page must be 1..1000, got %d", c.Page))
	}
	if c.FirstUser < 0 {
		errs = append(errs, b.Errorf("first_user", "first_user must be >= 0"))
	}
	if n := strings.Count(c.UserFormat, "%"); n != 1 || !strings.Contains(c.UserFormat, "%") ||
		strings.ContainsAny(c.UserFormat, " @\"\\\r\n") || !validVerb(c.UserFormat) {
		errs = append(errs, b.Errorf("user_format", "user_format %q: want one %%d verb and no spaces, like user%%04d", c.UserFormat))
	}
	if c.Domain == "" || strings.ContainsAny(c.Domain, " @<>\r\n") {
		errs = append(errs, b.Errorf("domain", "domain %q is not a mail domain", c.Domain))
	}
	if c.SMTP != "" {
		if _, _, err := net.SplitHostPort(c.SMTP); err != nil {
			errs = append(errs, b.Errorf("smtp", "smtp %q: want host:port", c.SMTP))
		}
	}
	c.smtpAddr = c.SMTP
	switch c.SMTPTLS {
	case "", smtpNoTLS:
		c.SMTPTLS = smtpNoTLS
	case smtpStartTLS, smtpImplicitTLS:
		host, _, _ := net.SplitHostPort(c.SMTP)
		c.smtpTLSCfg = &tls.Config{ServerName: host, InsecureSkipVerify: c.InsecureSkipVerify}
	default:
		errs = append(errs, b.Errorf("smtp_tls", "smtp_tls %q: want none, starttls or tls", c.SMTPTLS))
	}
	switch c.SMTPEngine {
	case "":
		c.SMTPEngine = smtpEngineGoroutines
		if smtpclient.LoopSupported && c.SMTPTLS == smtpNoTLS {
			c.SMTPEngine = smtpEngineEpoll
		}
	case smtpEngineGoroutines:
	case smtpEngineEpoll:
		if !smtpclient.LoopSupported {
			errs = append(errs, b.Errorf("smtp_engine", "smtp_engine epoll needs Linux; use goroutines"))
		} else if c.SMTPTLS != smtpNoTLS {
			errs = append(errs, b.Errorf("smtp_engine", "smtp_engine epoll speaks plain SMTP only; with smtp_tls %s use goroutines", c.SMTPTLS))
		}
	default:
		errs = append(errs, b.Errorf("smtp_engine", "smtp_engine %q: want epoll or goroutines", c.SMTPEngine))
	}
	if c.CalDAV != "" {
		u, err := url.Parse(c.CalDAV)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			errs = append(errs, b.Errorf("caldav", "caldav %q: want an http:// or https:// URL without credentials", c.CalDAV))
		} else {
			if !strings.HasSuffix(u.Path, "/") {
				u.Path += "/"
			}
			c.caldav = u
		}
	}
	pw := c.Password
	if pw == "" {
		if v, ok := os.LookupEnv(PasswordEnv); ok {
			pw = v
		} else {
			pw = DefaultPassword
		}
	}
	x, err := secret.Expand(pw)
	if err != nil {
		errs = append(errs, b.Errorf("password", "%v", err))
	} else if x == "" || strings.ContainsAny(x, "\r\n\x00") {
		errs = append(errs, b.Errorf("password", "the password is empty or holds a line break"))
	}
	c.password = x
	errs = append(errs, c.Population.validate(b)...)
	errs = append(errs, c.Lists.validate(b, c.Domain)...)
	return errs
}

// validVerb accepts one %d with optional zero padding and width.
func validVerb(f string) bool {
	i := strings.IndexByte(f, '%')
	j := i + 1
	for j < len(f) && f[j] >= '0' && f[j] <= '9' {
		j++
	}
	return j < len(f) && f[j] == 'd'
}

// scanNumber reads the number n that format (one %d verb, as validVerb
// accepts: "user%04d") prints as s, exactly: fmt.Sprintf(format, n) == s.
// It is fmt.Sscanf and a check, without their cost (it runs for every
// recipient of every message).
func scanNumber(format, s string) (int, bool) {
	i := strings.IndexByte(format, '%')
	if i < 0 || !strings.HasPrefix(s, format[:i]) {
		return 0, false
	}
	j := i + 1
	pad := byte(' ')
	if j < len(format) && format[j] == '0' {
		pad = '0'
	}
	width := 0
	for ; j < len(format) && format[j] >= '0' && format[j] <= '9'; j++ {
		width = 10*width + int(format[j]-'0')
	}
	if j >= len(format) || format[j] != 'd' || !strings.HasSuffix(s[i:], format[j+1:]) {
		return 0, false
	}
	text := s[i : len(s)-len(format)+j+1]
	digits := strings.TrimLeft(text, string(pad))
	if digits == "" {
		digits = "0" // all padding: only "0000" for %04d passes the check below
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return 0, false
	}
	// The text must be what the verb prints: the number, padded to the
	// width and no further ("+12" and "012" for %d are not).
	printed := strconv.Itoa(n)
	if len(text) != max(width, len(printed)) || text[len(text)-len(printed):] != printed ||
		strings.Trim(text[:len(text)-len(printed)], string(pad)) != "" {
		return 0, false
	}
	return n, true
}

// UserName is the log-on name of the user with global index id.
func (c *Config) UserName(id int) string {
	return fmt.Sprintf(c.UserFormat, id+c.FirstUser)
}

// Address is the mail address of the user with global index id.
func (c *Config) Address(id int) string { return c.UserName(id) + "@" + c.Domain }

// Describe implements driver.Describer: settings worth recording, never
// the password.
func (c *Config) Describe() map[string]string {
	m := map[string]string{
		"mode":        c.Mode,
		"idle":        strconv.FormatBool(c.idle),
		"auth":        c.Auth,
		"tls":         strconv.FormatBool(c.tls),
		"smtp":        c.smtpAddr,
		"smtp_auth":   strconv.FormatBool(c.SMTPAuth),
		"smtp_tls":    c.SMTPTLS,
		"smtp_engine": c.SMTPEngine,
		"caldav":      "none (calendar actions are counted as skipped)",
		"timeout":     c.Timeout.String(),
		"population":  c.pop.describe(),
		"lists":       c.Lists.describe(),
		"note":        "results of different user profiles are not comparable",
	}
	if c.caldav != nil {
		m["caldav"] = c.caldav.Redacted()
	}
	c.describeListMembers(m)
	if c.submitOnly {
		m["imap"] = "none: an smtp:// target, submission only (no log-on, no delivery tracking)"
		delete(m, "idle")
		delete(m, "mode")
	}
	return m
}

// Preflight checks, before the run, that the IMAP server greets and that
// the SMTP server answers EHLO (after STARTTLS with smtp_tls starttls), and
// the CalDAV server when configured, so a wrong target gives one clear
// message.
func (c *Config) Preflight(ctx context.Context) error {
	if c.targetErr != nil {
		return c.targetErr
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout.D())
	defer cancel()
	if !c.submitOnly {
		ic, err := c.dialIMAP(ctx)
		if err != nil {
			return fmt.Errorf("IMAP server %s: %w", c.imapAddr, err)
		}
		ic.Close()
	}
	if c.smtpAddr == "" {
		return fmt.Errorf("no SMTP server: set mail.smtp or add ?smtp=host:port to the target")
	}
	t := &smtpclient.Txn{EHLO: "client." + c.Domain, Probe: true, StartTLS: c.SMTPTLS == smtpStartTLS, Deadline: time.Now().Add(c.Timeout.D())}
	if d, ok := ctx.Deadline(); ok && d.Before(t.Deadline) {
		t.Deadline = d
	}
	if smtpclient.Converse(ctx, t, c.smtpServer(), c.Timeout.D()); t.Err() != nil {
		return fmt.Errorf("SMTP server %s: %w", c.smtpAddr, t.Err())
	}
	if c.dav != nil {
		if err := c.dav.Ping(ctx); err != nil {
			return fmt.Errorf("CalDAV server %s: %w", c.caldav.Redacted(), err)
		}
	}
	return nil
}
