package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	smb2 "github.com/cloudsoda/go-smb2"
)

// SambaPaths are the places besides PATH where StartSamba and Samba look for
// smbd; SmbpasswdPaths for smbpasswd (Debian package samba).
var (
	SambaPaths     = []string{"/usr/sbin/smbd"}
	SmbpasswdPaths = []string{"/usr/bin/smbpasswd"}
	// NSSWrapperPaths are where StartSamba looks for libnss_wrapper.so
	// (Debian package libnss-wrapper); each may be a glob.
	NSSWrapperPaths = []string{"/usr/lib/*/libnss_wrapper.so", "/usr/lib/libnss_wrapper.so", "/usr/lib64/libnss_wrapper.so"}
)

const (
	// SambaReadyTimeout bounds how long StartSamba waits for one smbd to
	// become ready.
	SambaReadyTimeout = 15 * time.Second
	// SambaUser is the SMB user of every private smbd. It exists only in the
	// server's private passwd file (nss_wrapper), as Unix user SambaUID.
	SambaUser = "throng"
	// SambaUID is the Unix user ID (and group ID) that SambaUser maps to:
	// the owner of the files the server writes.
	SambaUID = 5001
	// SambaShare is the name of the one share.
	SambaShare        = "share"
	sambaPollInterval = 10 * time.Millisecond
)

// SambaOptions configures StartSamba. The zero value is valid: SMB2_02 to
// SMB3_11, signing and encryption as the client asks, a fresh share.
type SambaOptions struct {
	// MinProtocol and MaxProtocol are smb.conf's "server min protocol" and
	// "server max protocol": SMB2_02, SMB2_10, SMB3_00, SMB3_02 or SMB3_11.
	// Empty means SMB2_02 and SMB3_11.
	MinProtocol, MaxProtocol string
	// Signing is "server signing": empty (Samba's default: signing when the
	// client asks), "mandatory" or "disabled".
	Signing string
	// Encrypt is "server smb encrypt": empty (Samba's default: encryption
	// when the client asks), "off", "desired" or "required" (every session
	// encrypted; SMB 3.0 and later).
	Encrypt string
	// ShareDir is the directory served as the share. Empty means a fresh
	// directory inside Server.Dir, removed by Stop. A given directory must
	// exist; its owner is set to SambaUID so that the server can write it,
	// and Stop leaves it (two servers may serve the same files).
	ShareDir string
	// Global are extra lines for the [global] section.
	Global []string
	// ShareOptions are extra lines for the share's section, like "case
	// sensitive = yes": with Samba's default (auto), creating a file that
	// does not exist yet scans its whole directory for a name differing
	// only in case, so filling one directory with N files costs O(N²).
	ShareOptions []string
}

var sambaProtocols = []string{"SMB2_02", "SMB2_10", "SMB3_00", "SMB3_02", "SMB3_11"}

func (o SambaOptions) withDefaults() (SambaOptions, error) {
	if o.MinProtocol == "" {
		o.MinProtocol = "SMB2_02"
	}
	if o.MaxProtocol == "" {
		o.MaxProtocol = "SMB3_11"
	}
	for _, p := range []string{o.MinProtocol, o.MaxProtocol} {
		if !contains(sambaProtocols, p) {
			return o, fmt.Errorf("testenv: samba: protocol %q: want one of %s", p, strings.Join(sambaProtocols, ", "))
		}
	}
	if o.Signing != "" && o.Signing != "mandatory" && o.Signing != "disabled" {
		return o, fmt.Errorf("testenv: samba: Signing %q: want \"\", mandatory or disabled", o.Signing)
	}
	if o.Encrypt != "" && !contains([]string{"off", "desired", "required"}, o.Encrypt) {
		return o, fmt.Errorf("testenv: samba: Encrypt %q: want \"\", off, desired or required", o.Encrypt)
	}
	for _, l := range append(append([]string{}, o.Global...), o.ShareOptions...) {
		if strings.ContainsAny(l, "\n[]") {
			return o, fmt.Errorf("testenv: samba: option line %q must be one line and not start a section", l)
		}
	}
	if o.ShareDir != "" {
		fi, err := os.Stat(o.ShareDir)
		if err != nil || !fi.IsDir() {
			return o, fmt.Errorf("testenv: samba: ShareDir %s is not a directory (%v)", o.ShareDir, err)
		}
		if o.ShareDir, err = filepath.Abs(o.ShareDir); err != nil {
			return o, err
		}
	}
	return o, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SambaServer is a running private smbd.
type SambaServer struct {
	*Server
	// User and Password log on to the share; the password is random for
	// each server, so only this server accepts it.
	User, Password string
	// Share is the share's name; ShareDir the directory it serves.
	Share, ShareDir string

	launch launch // how smbd was started, for Restart
	mu     sync.Mutex
}

// StartSamba starts a private Samba smbd (Debian package samba) on
// 127.0.0.1 and blocks until it is ready, or until it failed,
// SambaReadyTimeout passed or ctx was done. ctx governs the start only, not
// the life of the server: stop it with Stop (SIGTERM, then SIGKILL to its
// process group after StopTimeout).
//
// The server gets a fresh directory under os.TempDir() (Server.Dir) holding
// smb.conf, password (the SMB password, mode 0600, for manual runs), its private (passdb), lock, state, cache, pid and log
// directories, and share/ unless opts.ShareDir is given. Its SMB user
// SambaUser, Unix user SambaUID, lives in a private passwd file served by
// nss_wrapper (libnss-wrapper, LD_PRELOADed into smbpasswd and smbd), so
// nothing is written under /etc; the password is random. smbd runs in the
// foreground (-F, as its own process group leader; never with
// --no-process-group, which signals the whole group on stop) with no nmbd,
// no winbind and "rpc start on demand helpers = no" (no samba-dcerpcd
// helpers that would outlive it), on "smb ports" = a port free at start
// time, bound to 127.0.0.1 only. Server.URL is
// "smb://throng@127.0.0.1:PORT/share".
//
// It is ready when a real SMB log-on with this server's random password
// and a mount of the share succeed while the smbd started here is still
// running. If the port turns out to be taken, StartSamba retries with
// another port, up to 5 ports in all. smbd switches to the share user's
// Unix ID, so it needs root. On failure everything started is stopped and
// removed, and the error includes the end of smbd's log.
func StartSamba(ctx context.Context, opts SambaOptions) (*SambaServer, error) {
	return startSamba(ctx, opts, FreePort)
}

func startSamba(ctx context.Context, opts SambaOptions, nextPort func() (int, error)) (*SambaServer, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("testenv: samba: smbd must run as root (it switches to the share user's ID)")
	}
	tools, err := findSambaTools()
	if err != nil {
		return nil, err
	}
	s := &SambaServer{User: SambaUser, Share: SambaShare}
	srv, err := sambaSpec.start(ctx, 0, nextPort, func(ctx context.Context, _, dir string, port int) (launch, error) {
		return s.configure(ctx, tools, dir, port, opts)
	})
	if err != nil {
		return nil, err
	}
	s.Server = srv
	return s, nil
}

// sambaSpec is Debian's smbd, run through env with nss_wrapper preloaded
// (see configure).
var sambaSpec = spec{name: "samba", bin: "smbd", paths: SambaPaths,
	ready: SambaReadyTimeout, poll: sambaPollInterval, inUse: []string{"Address already in use"}}

type sambaTools struct{ smbd, smbpasswd, env, nssWrapper string }

func findSambaTools() (sambaTools, error) {
	var t sambaTools
	var err error
	if t.smbd, err = FindBinary("smbd", SambaPaths...); err != nil {
		return t, err
	}
	if t.smbpasswd, err = FindBinary("smbpasswd", SmbpasswdPaths...); err != nil {
		return t, err
	}
	if t.env, err = FindBinary("env", "/usr/bin/env"); err != nil {
		return t, err
	}
	if t.nssWrapper, err = FindNSSWrapper(); err != nil {
		return t, err
	}
	return t, nil
}

// FindNSSWrapper returns the path of libnss_wrapper.so (see NSSWrapperPaths).
func FindNSSWrapper() (string, error) {
	for _, p := range NSSWrapperPaths {
		matches, _ := filepath.Glob(p)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
				return m, nil
			}
		}
	}
	return "", fmt.Errorf("testenv: libnss_wrapper.so not found in %s (Debian package libnss-wrapper)", strings.Join(NSSWrapperPaths, ", "))
}

// configure writes smb.conf, the share, the nss_wrapper passwd and group
// files and the share user's password (set with smbpasswd) into dir.
func (s *SambaServer) configure(ctx context.Context, tools sambaTools, dir string, port int, opts SambaOptions) (launch, error) {
	if strings.ContainsAny(dir, "\"'\\$;[]% \t\n") {
		return launch{}, fmt.Errorf("temporary directory %q has characters smb.conf cannot take; set TMPDIR", dir)
	}
	for _, d := range []string{"private", "lock", "state", "cache", "pid", "ncalrpc", "log"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return launch{}, err
		}
	}
	share := opts.ShareDir
	if share == "" {
		share = filepath.Join(dir, "share")
		if err := os.Mkdir(share, 0o755); err != nil {
			return launch{}, err
		}
	}
	if err := os.Chown(share, SambaUID, SambaUID); err != nil {
		return launch{}, err
	}
	passwd := filepath.Join(dir, "passwd")
	group := filepath.Join(dir, "group")
	uid := strconv.Itoa(SambaUID)
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"+
		SambaUser+":x:"+uid+":"+uid+":throng testenv:"+share+":/usr/sbin/nologin\n"), 0o644); err != nil {
		return launch{}, err
	}
	if err := os.WriteFile(group, []byte("root:x:0:\nnogroup:x:65534:\n"+SambaUser+":x:"+uid+":\n"), 0o644); err != nil {
		return launch{}, err
	}
	conf := filepath.Join(dir, "smb.conf")
	if err := os.WriteFile(conf, []byte(sambaConfig(dir, share, port, opts)), 0o644); err != nil {
		return launch{}, err
	}
	env := []string{"LD_PRELOAD=" + tools.nssWrapper, "NSS_WRAPPER_PASSWD=" + passwd, "NSS_WRAPPER_GROUP=" + group}

	pwBytes := make([]byte, 12)
	rand.Read(pwBytes)
	password := hex.EncodeToString(pwBytes)
	cmd := exec.CommandContext(ctx, tools.smbpasswd, "-c", conf, "-s", "-a", SambaUser)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(password + "\n" + password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return launch{}, fmt.Errorf("smbpasswd -a %s: %v: %s", SambaUser, err, strings.TrimSpace(string(out)))
	}
	// For manual runs: files.password: ${file:DIR/password}.
	if err := os.WriteFile(filepath.Join(dir, "password"), []byte(password+"\n"), 0o600); err != nil {
		return launch{}, err
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.Password, s.ShareDir = password, share
	s.launch = launch{exe: tools.env,
		args: append(append([]string{}, env...), tools.smbd, "-F", "--no-process-group", "--debug-stdout", "-d", "1",
			"-l", filepath.Join(dir, "log"), "-s", conf),
		out: filepath.Join(dir, "log", "smbd.out"), logs: []string{filepath.Join(dir, "log", "log.smbd")},
		addr: addr, url: "smb://" + SambaUser + "@" + addr + "/" + SambaShare, probe: s.prober(addr)}
	return s.launch, nil
}

// prober returns the readiness probe: a log-on and a mount of the share
// with this start's password. A probe that gets no answer is abandoned
// after a timeout that starts short and doubles.
func (s *SambaServer) prober(addr string) func(context.Context) error {
	timeout := 100 * time.Millisecond
	return func(ctx context.Context) error {
		err := s.probe(ctx, addr, timeout)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v", timeout)
			timeout = min(2*timeout, 2*time.Second)
		}
		return err
	}
}

// probe logs on and mounts the share, within timeout.
func (s *SambaServer) probe(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	d := &smb2.Dialer{Initiator: &smb2.NTLMInitiator{User: s.User, Password: s.Password}}
	sess, err := d.DialConn(ctx, conn, "127.0.0.1")
	if err != nil {
		return fmt.Errorf("log-on: %w", err)
	}
	sh, err := sess.WithContext(ctx).Mount(`\\127.0.0.1\` + s.Share)
	if err != nil {
		sess.WithContext(ctx).Logoff()
		return fmt.Errorf("mount: %w", err)
	}
	sh.WithContext(ctx).Umount()
	sess.WithContext(ctx).Logoff()
	return nil
}

// Restart stops smbd (SIGTERM, as Stop), waits pause, and starts it again
// with the same configuration, data and port; it returns once the new smbd
// is ready. Every client connection breaks. It changes PID (and what Alive
// and Done report), so it must not run concurrently with Stop or with
// readers of PID.
func (s *SambaServer) Restart(ctx context.Context, pause time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.proc.stop(syscall.SIGTERM, StopTimeout); err != nil {
		return fmt.Errorf("testenv: samba: restart: %w", err)
	}
	select {
	case <-time.After(pause):
	case <-ctx.Done():
		return ctx.Err()
	}
	var err error
	for attempt := 0; ; attempt++ {
		var proc *process
		if proc, err = sambaSpec.run(ctx, s.Dir, &s.launch); err == nil {
			s.proc, s.PID = proc, proc.pid
			return nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == 4 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("testenv: samba: restart: %w", err)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logContainsAfter reports whether the file at path holds s past offset from.
func logContainsAfter(path string, from int64, s string) bool {
	b, _ := os.ReadFile(path)
	if int64(len(b)) < from {
		from = 0
	}
	return strings.Contains(string(b[from:]), s)
}

// sambaConfig renders the private smb.conf.
func sambaConfig(dir, share string, port int, o SambaOptions) string {
	p := func(name string) string { return filepath.Join(dir, name) }
	var b strings.Builder
	fmt.Fprintf(&b, `# private smbd config written by throng's internal/testenv; removed on Stop
[global]
   server role = standalone server
   workgroup = THRONG
   netbios name = THRONGSMB
   server string = throng testenv smbd
   interfaces = 127.0.0.1
   bind interfaces only = yes
   smb ports = %d
   disable netbios = yes
   server min protocol = %s
   server max protocol = %s
   security = user
   map to guest = never
   passdb backend = tdbsam:%s
   private dir = %s
   lock directory = %s
   state directory = %s
   cache directory = %s
   pid directory = %s
   ncalrpc dir = %s
   log file = %s
   max log size = 10000
   log level = 1
   logging = file
   load printers = no
   printing = bsd
   printcap name = /dev/null
   disable spoolss = yes
   # no on-demand samba-dcerpcd helpers: they would detach and outlive smbd
   rpc start on demand helpers = no
   usershare max shares = 0
   max connections = 0
`, port, o.MinProtocol, o.MaxProtocol, p("private/passdb.tdb"), p("private"), p("lock"), p("state"),
		p("cache"), p("pid"), p("ncalrpc"), p("log/log.%m"))
	if o.Signing != "" {
		fmt.Fprintf(&b, "   server signing = %s\n", o.Signing)
	}
	if o.Encrypt != "" {
		fmt.Fprintf(&b, "   server smb encrypt = %s\n", o.Encrypt)
	}
	for _, l := range o.Global {
		fmt.Fprintf(&b, "   %s\n", l)
	}
	fmt.Fprintf(&b, `
[%s]
   path = %s
   read only = no
   browseable = yes
   valid users = %s
   create mask = 0644
   directory mask = 0755
`, SambaShare, share, SambaUser)
	for _, l := range o.ShareOptions {
		fmt.Fprintf(&b, "   %s\n", l)
	}
	return b.String()
}

// RequireSamba skips the test when smbd, smbpasswd or libnss_wrapper is
// not installed or the test does not run as root, unless the environment
// variable CI is non-empty: then it fails the test (.ci/run installs them
// and runs as root). Call it from the test goroutine.
func RequireSamba(t testing.TB) {
	t.Helper()
	RequireBinary(t, "smbd", SambaPaths...)
	RequireBinary(t, "smbpasswd", SmbpasswdPaths...)
	if _, err := FindNSSWrapper(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v; .ci/run installs it", err)
		}
		t.Skipf("%v; skipping (with CI set this is a failure)", err)
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("testenv: samba needs root (smbd switches to the share user's ID); .ci/run runs as root")
		}
		t.Skip("testenv: samba needs root (smbd switches to the share user's ID); skipping (with CI set this is a failure)")
	}
}

// Samba starts a private smbd for the test with StartSamba (bounded by the
// test's context and SambaReadyTimeout) and registers t.Cleanup to stop it
// and remove its directory; a failing Stop is reported with t.Errorf. It
// skips or fails the test as RequireSamba does when smbd cannot run here,
// and fails the test if smbd does not start. Call it from the test
// goroutine.
func Samba(t testing.TB, opts SambaOptions) *SambaServer {
	t.Helper()
	RequireSamba(t)
	return started(t, &sambaSpec, func(ctx context.Context) (*SambaServer, error) { return StartSamba(ctx, opts) })
}
