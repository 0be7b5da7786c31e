// Command testenv starts and stops the real servers of internal/testenv by
// hand, for manual runs of throng against them.
//
//	testenv up nginx [-workers N] [-keepalive-requests N]
//	testenv down nginx
//	testenv status
//
// "up" starts the server, prints one line "NAME URL pid=PID dir=DIR" to
// stdout, records itself in $TMPDIR/throng-testenv/NAME.json and then stays in
// the foreground until SIGINT or SIGTERM, when it stops the server, removes
// the state file and exits 0. "down" sends SIGTERM to the "up" process
// recorded in the state file (after checking that it is one) and waits for it
// to exit. "status" lists the state files.
//
// Exit codes: 0 success, 1 failure, 2 usage error (including unknown servers).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/driver/mail"
	"github.com/throng-io/throng/internal/testenv"
)

// serverDef describes one server that testenv can run. Adding a server
// (mosquitto, nats-server, dovecot, postfix, samba, radicale, node_exporter)
// means writing one define function like nginx below and listing it in
// servers.
type serverDef struct {
	name    string
	summary string
	// define registers the server's flags on fs and returns the function
	// that starts the server with the parsed values and returns once it is
	// ready.
	define func(fs *flag.FlagSet) startFunc
}

type startFunc func(ctx context.Context) (*testenv.Server, error)

var servers = []serverDef{
	{name: "nginx", summary: "HTTP server (Debian package nginx), serves /one.html (1 byte) and /nginx_status", define: nginx},
	{name: "node_exporter", summary: "Prometheus node_exporter (Debian package prometheus-node-exporter), loopback exported, page at URL/metrics",
		define: func(*flag.FlagSet) startFunc { return testenv.StartNodeExporter }},
	{name: "prometheus", summary: "Prometheus server (Debian package prometheus), scrapes -targets every second, remote-write receiver at URL/api/v1/write, native histograms", define: prometheus},
	{name: "mosquitto", summary: "MQTT 3.1.1/5 broker (Debian package mosquitto), URL mqtt://ADDR, open-file limit raised", define: mosquitto},
	{name: "nats-server", summary: "NATS server (Debian package nats-server), URL nats://ADDR, open-file limit raised", define: natsServer},
	{name: "samba", summary: "SMB2/3 file server (Debian packages samba, libnss-wrapper), share at URL, password in DIR/password", define: samba},
	{name: "dovecot", summary: "IMAP + LMTP server (Debian packages dovecot-imapd, dovecot-lmtpd), users user0001.., password $MAIL_PASSWORD or random in DIR/password", define: dovecot},
	{name: "postfix", summary: "SMTP server (Debian package postfix) delivering to a running dovecot over LMTP (-lmtp ADDR), lists expanded", define: postfix},
	{name: "radicale", summary: "CalDAV/CardDAV server (Debian package radicale), users user0001.., password $MAIL_PASSWORD or random in DIR/password", define: radicale},
}

func nginx(fs *flag.FlagSet) startFunc {
	workers := fs.Int("workers", 1, "nginx worker_processes")
	keepalive := fs.Int("keepalive-requests", 100000, "nginx keepalive_requests (requests per keep-alive connection)")
	return func(ctx context.Context) (*testenv.Server, error) {
		return testenv.StartNginx(ctx, testenv.NginxOptions{Workers: *workers, KeepaliveRequests: *keepalive})
	}
}

func prometheus(fs *flag.FlagSet) startFunc {
	targets := fs.String("targets", "", "host:port addresses to scrape at /metrics, comma-separated (like a throng run's --prometheus)")
	return func(ctx context.Context) (*testenv.Server, error) {
		var ts []string
		for _, t := range strings.Split(*targets, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ts = append(ts, t)
			}
		}
		p, err := testenv.StartPrometheus(ctx, testenv.PrometheusOptions{Targets: ts, RemoteWrite: true, NativeHistograms: true})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "prometheus: UI and API at %s, remote write at %s\n", p.URL, p.WriteURL)
		return p.Server, nil
	}
}

// mailPassword is the accounts' password for dovecot and radicale: from
// $MAIL_PASSWORD (the mail driver's default too), else random; never from
// the command line, where ps shows it.
func mailPassword() string { return os.Getenv("MAIL_PASSWORD") }

func dovecot(fs *flag.FlagSet) startFunc {
	users := fs.Int("users", 100, "accounts user0001..userNNNN")
	nofsync := fs.Bool("nofsync", false, "mail_fsync = never")
	return func(ctx context.Context) (*testenv.Server, error) {
		d, err := testenv.StartDovecot(ctx, testenv.DovecotOptions{Users: *users, Password: mailPassword(), NoFsync: *nofsync})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "dovecot: IMAP %s, LMTP %s, %d users, password in %s/password\n", d.Addr, d.LMTPAddr, d.Users, d.Dir)
		return d.Server, nil
	}
}

func postfix(fs *flag.FlagSet) startFunc {
	lmtp := fs.String("lmtp", "", "the dovecot's LMTP address (printed by 'testenv up dovecot'); required")
	users := fs.Int("users", 100, "mailboxes user0001..userNNNN@example.test (as the dovecot's)")
	lists := fs.Int("lists", 100, "distribution lists list001.. (members as the mail driver draws them: min 2, avg 10, max 20)")
	return func(ctx context.Context) (*testenv.Server, error) {
		if *lmtp == "" {
			return nil, usageError{"up postfix: -lmtp ADDR is required"}
		}
		var aliases map[string][]string
		if *lists > 0 {
			aliases = mail.DefaultListAliases(mail.Lists{Count: *lists, Min: 2, Avg: 10, Max: 20}, *users)
		}
		p, err := testenv.StartPostfix(ctx, testenv.PostfixOptions{
			Dovecot: &testenv.DovecotServer{LMTPAddr: *lmtp, Users: *users}, Aliases: aliases})
		if err != nil {
			return nil, err
		}
		return p.Server, nil
	}
}

func radicale(fs *flag.FlagSet) startFunc {
	users := fs.Int("users", 100, "accounts user0001..userNNNN")
	return func(ctx context.Context) (*testenv.Server, error) {
		r, err := testenv.StartRadicale(ctx, testenv.RadicaleOptions{Users: *users, Password: mailPassword()})
		if err != nil {
			return nil, err
		}
		return r.Server, nil
	}
}

func samba(fs *flag.FlagSet) startFunc {
	minProto := fs.String("min-protocol", "SMB2_02", "server min protocol: SMB2_02, SMB2_10, SMB3_00, SMB3_02 or SMB3_11")
	maxProto := fs.String("max-protocol", "SMB3_11", "server max protocol")
	encrypt := fs.String("encrypt", "", `server smb encrypt: off, desired or required ("": as the client asks)`)
	signing := fs.String("signing", "", `server signing: mandatory or disabled ("": as the client asks)`)
	shareDir := fs.String("share-dir", "", "serve this existing directory (its owner becomes uid 5001); default: a fresh one in DIR")
	caseSensitive := fs.Bool("case-sensitive", false, "case sensitive = yes on the share (creating files in a large directory stays O(1))")
	return func(ctx context.Context) (*testenv.Server, error) {
		opts := testenv.SambaOptions{MinProtocol: *minProto, MaxProtocol: *maxProto, Encrypt: *encrypt, Signing: *signing, ShareDir: *shareDir}
		if *caseSensitive {
			opts.ShareOptions = []string{"case sensitive = yes"}
		}
		s, err := testenv.StartSamba(ctx, opts)
		if err != nil {
			return nil, err
		}
		return s.Server, nil
	}
}

// brokerAuth reads the broker's optional account: the user from --user,
// the password from the environment variable TESTENV_BROKER_PASSWORD (never
// from the command line, where ps shows it).
func brokerAuth(user string) (string, string, error) {
	if user == "" {
		return "", "", nil
	}
	pass, ok := os.LookupEnv("TESTENV_BROKER_PASSWORD")
	if !ok {
		return "", "", errors.New("--user needs the password in the environment variable TESTENV_BROKER_PASSWORD")
	}
	return user, pass, nil
}

func mosquitto(fs *flag.FlagSet) startFunc {
	port := fs.Int("port", 0, "port to listen on (0: a free port)")
	maxConn := fs.Int("max-connections", 0, "max_connections (0: unlimited)")
	user := fs.String("user", "", "require this user (password from $TESTENV_BROKER_PASSWORD)")
	return func(ctx context.Context) (*testenv.Server, error) {
		u, p, err := brokerAuth(*user)
		if err != nil {
			return nil, err
		}
		b, err := testenv.StartMosquitto(ctx, testenv.MosquittoOptions{Port: *port, MaxConnections: *maxConn, Username: u, Password: p})
		if err != nil {
			return nil, err
		}
		return b.Server, nil
	}
}

func natsServer(fs *flag.FlagSet) startFunc {
	port := fs.Int("port", 0, "port to listen on (0: a free port)")
	maxConn := fs.Int("max-connections", 0, "max_connections (0: 64,000)")
	user := fs.String("user", "", "require this user (password from $TESTENV_BROKER_PASSWORD)")
	return func(ctx context.Context) (*testenv.Server, error) {
		u, p, err := brokerAuth(*user)
		if err != nil {
			return nil, err
		}
		b, err := testenv.StartNATSServer(ctx, testenv.NATSServerOptions{Port: *port, MaxConnections: *maxConn, Username: u, Password: p})
		if err != nil {
			return nil, err
		}
		return b.Server, nil
	}
}

// state is the content of a state file.
type state struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"` // the "testenv up" process
	URL       string `json:"url"`
	Addr      string `json:"addr"`
	ServerPID int    `json:"server_pid"`
	Dir       string `json:"dir"`
	Started   string `json:"started"`
}

// downTimeout bounds "testenv down": the server has StopTimeout after
// SIGTERM, then SIGKILL and StopTimeout more to be reaped, and then its
// directory is removed, which for a populated mail server (thousands of
// maildirs) takes seconds of its own.
const downTimeout = 2*testenv.StopTimeout + 20*time.Second

// usageError is an error that exits with code 2 and the usage hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "testenv: %v\n", err)
		fmt.Fprintln(stderr, "run 'testenv help' for usage")
		return 2
	default:
		fmt.Fprintf(stderr, "testenv: %v\n", err)
		return 1
	}
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return usageError{"missing command"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return nil
	case "status":
		if len(rest) > 0 {
			return usageError{"status takes no arguments"}
		}
		return status(stdout)
	case "up", "down":
		if len(rest) == 0 {
			return usageError{fmt.Sprintf("%s: missing server name (one of: %s)", cmd, serverNames())}
		}
		def, err := lookup(rest[0])
		if err != nil {
			return err
		}
		if cmd == "up" {
			return up(def, rest[1:], stdout, stderr)
		}
		if len(rest) > 1 {
			return usageError{"down takes only the server name"}
		}
		return down(def.name, stdout)
	default:
		return usageError{fmt.Sprintf("unknown command %q (want up, down, status or help)", cmd)}
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  testenv up SERVER [flags]   start SERVER on 127.0.0.1, print "SERVER URL pid=PID dir=DIR",
                              run until SIGINT/SIGTERM, then stop it
  testenv down SERVER         stop the SERVER started by "testenv up"
  testenv status              list the servers started by "testenv up"

servers:
`)
	for _, s := range servers {
		fmt.Fprintf(w, "  %-12s %s\n", s.name, s.summary)
	}
	for _, s := range servers {
		fs := newFlagSet(s.name)
		s.define(fs)
		fmt.Fprintf(w, "\nflags of up %s:\n", s.name)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fmt.Fprintf(w, "\nstate files: %s\n", stateDir())
}

func lookup(name string) (serverDef, error) {
	for _, s := range servers {
		if s.name == name {
			return s, nil
		}
	}
	return serverDef{}, usageError{fmt.Sprintf("unknown server %q (known: %s)", name, serverNames())}
}

func serverNames() string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

func newFlagSet(server string) *flag.FlagSet {
	fs := flag.NewFlagSet("testenv up "+server, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage of %s [flags]:\n", fs.Name())
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return err
		}
		return usageError{fmt.Sprintf("%s: %v", fs.Name(), err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected arguments %q", fs.Name(), fs.Args())}
	}
	return nil
}

func stateDir() string { return filepath.Join(os.TempDir(), "throng-testenv") }

func statePath(name string) string { return filepath.Join(stateDir(), name+".json") }

// up runs "testenv up NAME": start, announce, wait for a signal, stop.
func up(def serverDef, args []string, stdout, stderr io.Writer) error {
	if st, err := readState(def.name); err == nil && isTestenvUp(st.PID, def.name) {
		return fmt.Errorf("%s is already up (%s, testenv pid %d); run 'testenv down %s' first", def.name, st.URL, st.PID, def.name)
	}
	fs := newFlagSet(def.name)
	start := def.define(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	// Catch signals before starting, so that one during the start stops it.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	s, err := start(ctx)
	if err != nil {
		return err
	}
	st := state{
		Name: def.name, PID: os.Getpid(), URL: s.URL, Addr: s.Addr,
		ServerPID: s.PID, Dir: s.Dir, Started: time.Now().UTC().Format(time.RFC3339),
	}
	if err := writeState(st); err != nil {
		return errors.Join(err, s.Stop())
	}
	url := s.URL
	if url == "" {
		url = s.Addr
	}
	fmt.Fprintf(stdout, "%s %s pid=%d dir=%s\n", def.name, url, s.PID, s.Dir)

	var exitErr error
	select {
	case <-ctx.Done():
		fmt.Fprintf(stderr, "testenv: %s: signal received, stopping\n", def.name)
	case <-s.Done():
		exitErr = fmt.Errorf("%s exited unexpectedly", def.name)
	}
	cancel()
	err = s.Stop()
	removeState(def.name, os.Getpid())
	if exitErr != nil || err != nil {
		return errors.Join(exitErr, err)
	}
	fmt.Fprintf(stderr, "testenv: %s stopped\n", def.name)
	return nil
}

// down runs "testenv down NAME".
func down(name string, stdout io.Writer) error {
	st, err := readState(name)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stdout, "%s: not up (no state file %s; a testenv started with another TMPDIR keeps its state under that one)\n", name, statePath(name))
		return nil
	}
	if err != nil {
		return err
	}
	if !processRunning(st.PID) {
		os.Remove(statePath(name))
		fmt.Fprintf(stdout, "%s: testenv pid %d is gone; removed stale state file%s\n", name, st.PID, orphanNote(st))
		return nil
	}
	if !isTestenvUp(st.PID, name) {
		os.Remove(statePath(name))
		return fmt.Errorf("%s: pid %d from %s is not a 'testenv up %s' process (cmdline %q); not signalling it, removed the stale state file%s",
			name, st.PID, statePath(name), name, cmdline(st.PID), orphanNote(st))
	}
	if err := syscall.Kill(st.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("%s: SIGTERM to testenv pid %d: %w", name, st.PID, err)
	}
	start := time.Now()
	for processRunning(st.PID) {
		if time.Since(start) > downTimeout {
			return fmt.Errorf("%s: sent SIGTERM to testenv pid %d, still running after %v", name, st.PID, downTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(stdout, "%s: sent SIGTERM to testenv pid %d (server pid %d, %s); it exited after %v\n",
		name, st.PID, st.ServerPID, st.URL, time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(statePath(name)); err == nil {
		os.Remove(statePath(name))
		fmt.Fprintf(stdout, "%s: testenv did not remove its state file; removed it%s\n", name, orphanNote(st))
	}
	return nil
}

// orphanNote warns when the server process of a vanished "testenv up" seems
// to be still running. It does not signal it: down only signals testenv.
func orphanNote(st state) string {
	if st.ServerPID > 0 && processRunning(st.ServerPID) && st.Dir != "" && strings.Contains(cmdline(st.ServerPID), st.Dir) {
		return fmt.Sprintf("\nwarning: server pid %d (%s) is still running without its testenv; stop it with: kill %d; rm -rf %s",
			st.ServerPID, st.Name, st.ServerPID, st.Dir)
	}
	return ""
}

// status runs "testenv status".
func status(stdout io.Writer) error {
	files, err := filepath.Glob(filepath.Join(stateDir(), "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if len(files) == 0 {
		fmt.Fprintf(stdout, "no servers up (no state files in %s)\n", stateDir())
		return nil
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		st, err := readState(name)
		if err != nil {
			fmt.Fprintf(stdout, "%-12s unreadable state file %s: %v\n", name, f, err)
			continue
		}
		up := "up"
		if !isTestenvUp(st.PID, name) {
			up = "stale (no running testenv up process)"
		}
		fmt.Fprintf(stdout, "%-12s %s  %s  testenv pid=%d  server pid=%d (%s)  dir=%s  since %s\n",
			name, up, st.URL, st.PID, st.ServerPID, runningWord(st.ServerPID), st.Dir, st.Started)
	}
	return nil
}

func runningWord(pid int) string {
	if processRunning(pid) {
		return "running"
	}
	return "gone"
}

func readState(name string) (state, error) {
	var st state
	b, err := os.ReadFile(statePath(name))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", statePath(name), err)
	}
	return st, nil
}

// writeState writes the state file atomically (temp file + rename).
func writeState(st state) error {
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(st.Name) + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, statePath(st.Name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// removeState removes the state file if it still records pid.
func removeState(name string, pid int) {
	if st, err := readState(name); err == nil && st.PID == pid {
		os.Remove(statePath(name))
	}
}

// processRunning reports whether pid exists and is not a zombie.
func processRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// cmdline returns /proc/PID/cmdline with NULs as spaces ("" if unreadable).
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// isTestenvUp reports whether pid is a running "testenv up NAME" process
// (as started by "go run ./cmd/testenv" or from a built binary).
func isTestenvUp(pid int, name string) bool {
	if !processRunning(pid) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	return len(argv) >= 3 && filepath.Base(argv[0]) == "testenv" && argv[1] == "up" && argv[2] == name
}
