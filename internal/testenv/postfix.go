package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PostfixPaths are where StartPostfix looks for the postfix command; the
// master daemon is in PostfixDaemonDir.
var (
	PostfixPaths     = []string{"/usr/sbin/postfix"}
	PostfixDaemonDir = "/usr/lib/postfix/sbin"
)

const (
	// PostfixReadyTimeout bounds how long StartPostfix waits for one
	// Postfix to become ready (its integrity check included).
	PostfixReadyTimeout = 20 * time.Second
	// PostfixMessageSizeLimit is message_size_limit (a larger message is
	// refused with 552).
	PostfixMessageSizeLimit = 50 << 20
)

// PostfixOptions configures StartPostfix.
type PostfixOptions struct {
	// Dovecot receives the mail over LMTP; its users are the domain's
	// mailboxes. Required.
	Dovecot *DovecotServer
	// Domain is the virtual mailbox domain (default example.test).
	Domain string
	// Aliases are distribution lists: address -> member addresses,
	// expanded by Postfix (virtual_alias_maps), so one message fans out
	// on the server.
	Aliases map[string][]string
	// STARTTLS makes smtpd offer STARTTLS (smtpd_tls_security_level =
	// may) with a self-signed certificate for 127.0.0.1: clients skip
	// verification or trust PostfixServer.CertPEM.
	STARTTLS bool
	// ImplicitTLS makes a second smtpd speak TLS from the first byte
	// (smtpd_tls_wrappermode, RFC 8314: port 465's way) on
	// PostfixServer.TLSAddr, with the same certificate.
	ImplicitTLS bool
	// HeaderChecks are the lines of a header_checks table (regexp:), like
	// `/^X-Throng-Mark: [0-9a-f]+\.7$/ DISCARD`: a test's faults (drop or
	// redirect known messages) whose truth it knows.
	HeaderChecks []string
}

// PostfixServer is a running private Postfix: SMTP on Addr, delivering
// to its Dovecot over LMTP.
type PostfixServer struct {
	*Server
	Domain  string
	ConfDir string // main.cf, master.cf, vmailbox, aliases
	CertPEM []byte // with STARTTLS or ImplicitTLS: the server's certificate
	TLSAddr string // with ImplicitTLS: where smtpd speaks TLS at once
}

// StartPostfix starts a private Postfix on 127.0.0.1 and blocks until it
// is ready, or until it failed, PostfixReadyTimeout passed or ctx was
// done. ctx governs the start only.
//
// Its configuration: a private config_directory
// (nothing written under /etc/postfix), virtual domain Domain whose
// mailboxes are the Dovecot's users (texthash:, no postmap), Aliases as
// virtual_alias_maps, virtual_transport lmtp to the Dovecot, and every
// other destination refused (default_transport and relay_transport are
// errors, reject_unauth_destination), so nothing leaves the machine.
// `postfix -c DIR check` creates the queue, then the master daemon runs as
// this process's direct child (master -c DIR -s -d: in the foreground,
// without a new session, so it stays in its process group); SIGTERM stops
// it. The mail log is Server.ErrorLog.
//
// It is ready when the SMTP port greets with a banner carrying a random
// per-start token while the master started here is running. A port found
// taken is retried with another (5 attempts). Postfix needs root.
func StartPostfix(ctx context.Context, opts PostfixOptions) (*PostfixServer, error) {
	if opts.Dovecot == nil {
		return nil, errors.New("testenv: postfix: PostfixOptions.Dovecot is required (it receives the mail)")
	}
	if opts.Domain == "" {
		opts.Domain = "example.test"
	}
	var confDir, tlsAddr string
	var certPEM []byte
	s, err := postfixSpec.start(ctx, 0, nil, func(ctx context.Context, bin, dir string, port int) (l launch, err error) {
		l, confDir, certPEM, tlsAddr, err = postfixConfigure(ctx, bin, dir, port, opts)
		return l, err
	})
	if err != nil {
		return nil, err
	}
	return &PostfixServer{Server: s, Domain: opts.Domain, ConfDir: confDir, CertPEM: certPEM, TLSAddr: tlsAddr}, nil
}

// postfixSpec is Debian's postfix; its master daemon runs in the
// foreground.
var postfixSpec = spec{name: "postfix", bin: "postfix", paths: PostfixPaths,
	ready: PostfixReadyTimeout, poll: 10 * time.Millisecond, inUse: []string{"Address already in use"}}

// postfixConfigure writes Postfix's configuration (main.cf, master.cf,
// the mailbox and alias maps, the certificate) into dir and checks it with
// "postfix check"; it returns the configuration directory, the
// certificate and the implicit-TLS listener's address (when asked for).
func postfixConfigure(ctx context.Context, bin, dir string, port int, opts PostfixOptions) (l launch, conf string, certPEM []byte, tlsAddr string, err error) {
	master := filepath.Join(PostfixDaemonDir, "master")
	if _, err := os.Stat(master); err != nil {
		return l, "", nil, "", err
	}
	if strings.ContainsAny(dir, " ,\t\n$") {
		return l, "", nil, "", fmt.Errorf("temporary directory %q has characters main.cf cannot take; set TMPDIR", dir)
	}
	conf = filepath.Join(dir, "conf")
	for _, sub := range []string{"conf", "spool", "data", "log"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return l, "", nil, "", fmt.Errorf("%w", err)
		}
	}
	if u, err := user.Lookup("postfix"); err == nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chown(filepath.Join(dir, "data"), uid, gid)
	}
	tok := make([]byte, 8)
	rand.Read(tok)
	token := "throng-" + hex.EncodeToString(tok)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var vmail strings.Builder
	for n := 1; n <= opts.Dovecot.Users; n++ {
		fmt.Fprintf(&vmail, "%s@%s OK\n", UserName(n), opts.Domain)
	}
	var aliases strings.Builder
	keys := make([]string, 0, len(opts.Aliases))
	for k := range opts.Aliases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.ContainsAny(k+strings.Join(opts.Aliases[k], ""), " \t\n:") {
			return l, "", nil, "", fmt.Errorf("alias %q: addresses may not hold spaces or colons", k)
		}
		fmt.Fprintf(&aliases, "%s %s\n", k, strings.Join(opts.Aliases[k], ", "))
	}
	files := map[string]string{
		"main.cf":   postfixMainCf(dir, opts.Domain, token, opts.Dovecot.LMTPAddr),
		"master.cf": postfixMasterCf(addr),
		"vmailbox":  vmail.String(),
		"aliases":   aliases.String(),
	}
	if len(opts.HeaderChecks) > 0 {
		for _, hc := range opts.HeaderChecks {
			if strings.ContainsAny(hc, "\r\n") {
				return l, "", nil, "", fmt.Errorf("header check %q holds a line break", hc)
			}
		}
		files["header_checks"] = strings.Join(opts.HeaderChecks, "\n") + "\n"
		files["main.cf"] += "header_checks = regexp:" + filepath.Join(conf, "header_checks") + "\n"
	}
	if opts.STARTTLS || opts.ImplicitTLS {
		_, cert, key, err := SelfSigned()
		if err != nil {
			return l, "", nil, "", fmt.Errorf("certificate: %w", err)
		}
		certPEM = cert
		files["cert.pem"], files["key.pem"] = string(cert), string(key)
		level := "none"
		if opts.STARTTLS {
			level = "may"
		}
		files["main.cf"] += fmt.Sprintf("smtpd_tls_security_level = %s\nsmtpd_tls_loglevel = 1\nsmtpd_tls_cert_file = %s\nsmtpd_tls_key_file = %s\n",
			level, filepath.Join(conf, "cert.pem"), filepath.Join(conf, "key.pem"))
		files["master.cf"] += "tlsmgr    unix  -       -       n       1000?   1       tlsmgr\n"
	}
	if opts.ImplicitTLS {
		// A port taken meanwhile fails the start with "Address already in
		// use", and onFreePort tries again.
		port2, err := FreePort()
		if err != nil {
			return l, "", nil, "", err
		}
		tlsAddr = "127.0.0.1:" + strconv.Itoa(port2)
		files["master.cf"] += tlsAddr + " inet  n       -       n       -       -       smtpd -o smtpd_tls_wrappermode=yes -o smtpd_tls_security_level=encrypt\n"
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(text), 0o644); err != nil {
			return l, "", nil, "", fmt.Errorf("%w", err)
		}
	}
	maillog := filepath.Join(dir, "log", "postfix.log")
	cctx, cancel := context.WithTimeout(ctx, PostfixReadyTimeout)
	defer cancel()
	if b, err := exec.CommandContext(cctx, bin, "-c", conf, "check").CombinedOutput(); err != nil {
		return l, "", nil, "", fmt.Errorf("postfix check: %v %s%s", err, b, logSuffix(maillog))
	}
	return launch{exe: master, args: []string{"-c", conf, "-s", "-d"}, out: filepath.Join(dir, "log", "master.out"),
		errorLog: maillog, addr: addr, probe: func(ctx context.Context) error { return smtpBanner(ctx, addr, token) }}, conf, certPEM, tlsAddr, nil
}

// smtpBanner reports nil when addr greets with a 220 banner holding token.
func smtpBanner(ctx context.Context, addr, token string) error {
	c, r, err := dialLine(ctx, addr)
	if err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	c.Close()
	switch {
	case err != nil:
		return err
	case !strings.HasPrefix(line, "220 ") || !strings.Contains(line, token):
		return fmt.Errorf("banner %q lacks this start's token (another server on this port?)", strings.TrimSpace(line))
	}
	return nil
}

func postfixMainCf(dir, domain, token, lmtp string) string {
	p := func(name string) string { return filepath.Join(dir, name) }
	return fmt.Sprintf(`# private postfix instance written by throng's internal/testenv; removed on Stop
compatibility_level = 3.6
queue_directory = %[1]s
data_directory = %[2]s
maillog_file = %[3]s
maillog_file_prefixes = %[4]s
myhostname = mx.%[5]s
mydomain = %[5]s
myorigin = %[5]s
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relayhost =
local_transport = error:local delivery disabled
alias_maps =
alias_database =
biff = no
smtputf8_enable = no
smtpd_banner = $myhostname ESMTP %[6]s
virtual_mailbox_domains = %[5]s
virtual_mailbox_maps = texthash:%[7]s
virtual_alias_maps = texthash:%[8]s
virtual_transport = lmtp:inet:%[9]s
lmtp_host_lookup = native
smtp_host_lookup = native
smtpd_relay_restrictions = reject_unauth_destination
smtpd_recipient_restrictions = reject_unauth_destination
message_size_limit = %[10]d
default_process_limit = 200
smtpd_client_connection_count_limit = 0
smtpd_client_connection_rate_limit = 0
smtpd_client_message_rate_limit = 0
anvil_rate_time_unit = 60s
# a delivery deferred while Dovecot restarts is retried within seconds
# (defaults: 300s and more), so a test's drain sees it
minimal_backoff_time = 1s
maximal_backoff_time = 2s
queue_run_delay = 1s
# never deliver anywhere except Dovecot LMTP on loopback
default_transport = error:outbound delivery disabled
relay_transport = error:outbound delivery disabled
`, p("spool"), p("data"), p("log/postfix.log"), p("log"), domain, token, p("conf/vmailbox"), p("conf/aliases"),
		lmtp, PostfixMessageSizeLimit)
}

func postfixMasterCf(addr string) string {
	return addr + ` inet  n       -       n       -       -       smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`
}

// QueueEmpty reports whether Postfix's queue holds no message (everything
// accepted has been delivered or bounced): no file under incoming,
// active or deferred.
func (p *PostfixServer) QueueEmpty() bool {
	for _, q := range []string{"incoming", "active", "deferred", "maildrop"} {
		n := 0
		filepath.WalkDir(filepath.Join(p.Dir, "spool", q), func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		if n > 0 {
			return false
		}
	}
	return true
}

// Postfix starts a private Postfix for the test and registers t.Cleanup
// to stop it. It skips (fails with CI set) when postfix is not installed
// or when not running as root.
func Postfix(t testing.TB, opts PostfixOptions) *PostfixServer {
	t.Helper()
	RequireBinary(t, "postfix", PostfixPaths...) // before the root check: a skip says what is missing
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("postfix needs root; CI runs as root")
		}
		t.Skip("postfix needs root; skipping")
	}
	return started(t, &postfixSpec, func(ctx context.Context) (*PostfixServer, error) { return StartPostfix(ctx, opts) })
}
