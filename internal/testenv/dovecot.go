package testenv

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DovecotPaths are the places besides PATH where StartDovecot looks for
// the dovecot binary (Debian packages dovecot-imapd and dovecot-lmtpd).
var DovecotPaths = []string{"/usr/sbin/dovecot"}

const (
	// DovecotReadyTimeout bounds how long StartDovecot waits for one
	// Dovecot to become ready.
	DovecotReadyTimeout = 15 * time.Second
	dovecotPollInterval = 10 * time.Millisecond
	// DovecotMailUID is the owner of the mailboxes when started as root
	// (a numeric ID: no /etc/passwd entry is needed).
	DovecotMailUID = 5000
)

// DovecotOptions configures StartDovecot. The zero value is valid.
type DovecotOptions struct {
	// Users is the number of accounts, user0001..userNNNN (the mail
	// driver's default names); 0 means 100.
	Users int
	// Password is every account's password; "" draws a random one per
	// start (DovecotServer.Password).
	Password string
	// NoFsync sets mail_fsync = never (default: optimized).
	NoFsync bool
}

// DovecotServer is a running private Dovecot: IMAP on Addr, LMTP on
// LMTPAddr, maildir storage under MailDir.
type DovecotServer struct {
	*Server
	LMTPAddr string
	Password string // every account's password; keep it out of logs
	Users    int
	MailDir  string // user N's maildir is MailDir/userNNNN/Maildir
	Conf     string // dovecot.conf
	launch   launch // how it was started, for Restart
}

// accounts checks and completes the accounts of a server with users
// (user0001..): a number of users (0: 100) and their password ("": a
// random one, drawn per start).
func accounts(name string, users *int, password *string) error {
	if *users < 0 {
		return fmt.Errorf("testenv: %s: Users %d < 0", name, *users)
	}
	if *users == 0 {
		*users = 100
	}
	if strings.ContainsAny(*password, ":\r\n") {
		return fmt.Errorf("testenv: %s: the password may not hold ':' or a line break", name)
	}
	if *password == "" {
		b := make([]byte, 12)
		rand.Read(b)
		*password = hex.EncodeToString(b)
	}
	return nil
}

// UserName is the name of account n (1-based): user0001.
func UserName(n int) string { return fmt.Sprintf("user%04d", n) }

// StartDovecot starts a private Dovecot (IMAP + LMTP) on 127.0.0.1 and
// blocks until it is ready, or until it failed, DovecotReadyTimeout passed
// or ctx was done. ctx governs the start only.
//
// The server gets a fresh directory (Server.Dir) holding dovecot.conf,
// users.passwd (passwd-file with {PLAIN} passwords), dovecot.log (its
// stderr, Server.ErrorLog), run/ (base_dir: sockets, master.pid), state/
// mail/ (maildir per user, owned by DovecotMailUID when root) and
// password (the accounts' password, mode 0600, for ${file:...}). The
// configuration is made for thousands of sessions on loopback:
// loopback only, no TLS, plaintext auth allowed, auth_username_format %Ln
// (user0001@example.test over LMTP is user0001 over IMAP),
// mail_max_userip_connections raised to 1000, login processes reused
// (service_count 0) and process limits for thousands of sessions.
//
// It is ready when the IMAP port greets with "* OK", a LOGIN of user0001
// with this start's random password succeeds (only this very server knows
// it), the LMTP port greets with 220, and the master started here is still
// running. A port found taken is retried with others (5 attempts).
func StartDovecot(ctx context.Context, opts DovecotOptions) (*DovecotServer, error) {
	if err := accounts("dovecot", &opts.Users, &opts.Password); err != nil {
		return nil, err
	}
	d := &DovecotServer{Password: opts.Password, Users: opts.Users}
	s, err := dovecotSpec.start(ctx, 0, nil, func(_ context.Context, _, dir string, port int) (launch, error) {
		return d.configure(dir, port, opts)
	})
	if err != nil {
		return nil, err
	}
	d.Server = s
	return d, nil
}

// dovecotSpec is Debian's dovecot, its master in the foreground.
var dovecotSpec = spec{name: "dovecot", bin: "dovecot", paths: DovecotPaths,
	ready: DovecotReadyTimeout, poll: dovecotPollInterval, inUse: []string{"Address already in use"}}

// configure writes dovecot.conf, the users' password file and the mail
// directory into dir: IMAP on imapPort, LMTP on a free port.
func (d *DovecotServer) configure(dir string, imapPort int, opts DovecotOptions) (launch, error) {
	if strings.ContainsAny(dir, "\"'\\$;{} \t\n#") {
		return launch{}, fmt.Errorf("temporary directory %q has characters dovecot.conf cannot take; set TMPDIR", dir)
	}
	lmtpPort, err := FreePort()
	if err != nil {
		return launch{}, err
	}
	d.MailDir, d.Conf, d.LMTPAddr = filepath.Join(dir, "mail"), filepath.Join(dir, "dovecot.conf"), "127.0.0.1:"+strconv.Itoa(lmtpPort)
	uid, gid, owner, err := mailOwner()
	if err != nil {
		return launch{}, err
	}
	for _, sub := range []string{"mail", "state", "run"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return launch{}, err
		}
	}
	if err := os.Chown(d.MailDir, uid, gid); err != nil {
		return launch{}, err
	}
	var pw strings.Builder
	for n := 1; n <= opts.Users; n++ {
		fmt.Fprintf(&pw, "%s:{PLAIN}%s::::::\n", UserName(n), opts.Password)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.passwd"), []byte(pw.String()), 0o644); err != nil {
		return launch{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "password"), []byte(opts.Password+"\n"), 0o600); err != nil {
		return launch{}, err
	}
	if err := os.WriteFile(d.Conf, []byte(dovecotConfig(dir, imapPort, lmtpPort, uid, gid, owner, opts)), 0o644); err != nil {
		return launch{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(imapPort)
	d.launch = launch{args: []string{"-F", "-c", d.Conf}, out: filepath.Join(dir, "dovecot.log"), addr: addr,
		probe: func(ctx context.Context) error { return d.probe(ctx, addr) }}
	return d.launch, nil
}

// mailOwner is the uid/gid owning the mail: DovecotMailUID as root, else
// the running user (and its name, for Dovecot's internal users).
func mailOwner() (uid, gid int, name string, err error) {
	if os.Geteuid() == 0 {
		return DovecotMailUID, DovecotMailUID, "", nil
	}
	u, err := user.Current()
	if err != nil {
		return 0, 0, "", fmt.Errorf("testenv: dovecot: %w", err)
	}
	return os.Geteuid(), os.Getegid(), u.Username, nil
}

// probe logs user0001 on over IMAP and reads the LMTP greeting.
func (d *DovecotServer) probe(ctx context.Context, addr string) error {
	c, r, err := dialLine(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "* OK") {
		return fmt.Errorf("IMAP greeting %q, %v (wait for * OK: imap-login accepts before auth is ready)", line, err)
	}
	fmt.Fprintf(c, "p1 LOGIN %s \"%s\"\r\n", UserName(1), d.Password)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("IMAP LOGIN: %w", err)
		}
		if strings.HasPrefix(line, "p1 ") {
			if !strings.HasPrefix(line, "p1 OK") {
				return fmt.Errorf("IMAP LOGIN: %s (another server on this port?)", strings.TrimSpace(line))
			}
			break
		}
	}
	fmt.Fprintf(c, "p2 LOGOUT\r\n")
	l, lr, err := dialLine(ctx, d.LMTPAddr)
	if err != nil {
		return err
	}
	defer l.Close()
	if line, err := lr.ReadString('\n'); err != nil || !strings.HasPrefix(line, "220 ") {
		return fmt.Errorf("LMTP greeting %q, %v", line, err)
	}
	fmt.Fprintf(l, "QUIT\r\n")
	return nil
}

// dialLine connects with a short bound and returns a line reader.
func dialLine(ctx context.Context, addr string) (net.Conn, *bufio.Reader, error) {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(2 * time.Second))
	return c, bufio.NewReader(c), nil
}

// Restart stops the master (SIGTERM, like a server restart; SIGKILL to
// its group after 2 s) and starts it again on the same ports,
// configuration and mail, then waits until it is ready. Sessions open during the restart are cut. It must not be
// called concurrently with Stop or Alive.
func (d *DovecotServer) Restart(ctx context.Context) error {
	if d.proc == nil {
		return errors.New("testenv: dovecot: not started")
	}
	// A login process still holding a client before its log-on can keep
	// the master waiting; after 2 s the group is killed, which is a
	// restart too (a crash): only a process that will not die is an error.
	if err := d.proc.stop(syscall.SIGTERM, 2*time.Second); err != nil {
		select {
		case <-d.proc.done:
		default:
			return fmt.Errorf("testenv: dovecot: restart: %w", err)
		}
	}
	// The children (imap, auth, log) follow the master within a second;
	// a new master must not find the old one's sockets in use.
	deadline := time.Now().Add(StopTimeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", d.Addr, 100*time.Millisecond); err != nil {
			break
		} else {
			c.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
	proc, err := dovecotSpec.run(ctx, d.Dir, &d.launch)
	if err != nil {
		return err
	}
	d.proc, d.PID = proc, proc.pid
	return nil
}

// dovecotConfig renders the private dovecot.conf.
func dovecotConfig(dir string, imapPort, lmtpPort, uid, gid int, owner string, o DovecotOptions) string {
	p := func(name string) string { return filepath.Join(dir, name) }
	fsync := "optimized"
	if o.NoFsync {
		fsync = "never"
	}
	internal := ""
	if owner != "" {
		internal = fmt.Sprintf("default_internal_user = %s\ndefault_login_user = %s\ndefault_internal_group = %s\n", owner, owner, owner)
	}
	return fmt.Sprintf(`# private dovecot config written by throng's internal/testenv; removed on Stop
protocols = imap lmtp
listen = 127.0.0.1
base_dir = %[1]s
state_dir = %[2]s
instance_name = throng-dovecot-%[3]d
log_path = /dev/stderr
info_log_path = /dev/stderr
debug_log_path = /dev/stderr
ssl = no
disable_plaintext_auth = no
# a wrong password is answered at once (tests count refusals; default 2s)
auth_failure_delay = 0
auth_mechanisms = plain login
auth_username_format = %%Ln
mail_location = maildir:%[4]s/%%n/Maildir
mail_uid = %[5]d
mail_gid = %[6]d
first_valid_uid = %[5]d
last_valid_uid = %[5]d
mail_fsync = %[7]s
lmtp_save_to_detail_mailbox = no
recipient_delimiter = +
postmaster_address = postmaster@example.test
hostname = mail.example.test
%[8]s
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%n %[9]s
}
userdb {
  driver = passwd-file
  args = username_format=%%n %[9]s
  default_fields = uid=%[5]d gid=%[6]d home=%[4]s/%%n
}
namespace inbox {
  inbox = yes
  separator = /
}
# scale: thousands of sessions, many per user from one address
default_client_limit = 20000
mail_max_userip_connections = 1000
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[3]d
  }
  inet_listener imaps {
    port = 0
  }
  service_count = 0
  process_min_avail = 2
  client_limit = 5000
  vsz_limit = 1G
}
service imap {
  process_limit = 5000
}
# no growing delay after refused log-ons from the load generator's address
# (Dovecot's documented switch: auth cannot reach anvil's penalty socket)
service anvil {
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = %[10]d
  }
}
`, p("run"), p("state"), imapPort, p("mail"), uid, gid, fsync, internal, p("users.passwd"), lmtpPort)
}

// Dovecot starts a private Dovecot for the test (bounded by the test's
// context and DovecotReadyTimeout) and registers t.Cleanup to stop it and
// remove its directory. It skips or fails the test as RequireBinary does
// when dovecot is not installed.
func Dovecot(t testing.TB, opts DovecotOptions) *DovecotServer {
	t.Helper()
	return started(t, &dovecotSpec, func(ctx context.Context) (*DovecotServer, error) { return StartDovecot(ctx, opts) })
}
