package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// MosquittoPaths are the places besides PATH where StartMosquitto looks for
// Debian's mosquitto (and mosquitto_passwd beside it).
var MosquittoPaths = []string{"/usr/sbin/mosquitto"}

const (
	// BrokerReadyTimeout bounds how long StartMosquitto and StartNATSServer
	// wait for one broker process to become ready.
	BrokerReadyTimeout = 10 * time.Second
	brokerPollInterval = 5 * time.Millisecond
	// DefaultBrokerNoFile is the open-file limit a broker gets (each
	// connection is a file descriptor; 10,000 subscribers need more than
	// the usual 1,024).
	DefaultBrokerNoFile = 65536
)

// MosquittoOptions configures StartMosquitto. The zero value is an
// anonymous broker without a connection limit.
type MosquittoOptions struct {
	// Username and Password, when set, are the one account the broker
	// accepts (allow_anonymous false, a password file made with
	// mosquitto_passwd).
	Username, Password string
	// MaxConnections is the listener's max_connections (0: unlimited).
	MaxConnections int
	// NoFile is the broker's open-file limit (0: DefaultBrokerNoFile,
	// lowered to what the system allows).
	NoFile int
	// Port to listen on (0: a free port, with retries when it is taken).
	// Restart keeps the port.
	Port int
}

// Broker is a running broker (mosquitto or nats-server) that can be
// restarted on the same port, for the "broker restarted mid-run" tests.
type Broker struct {
	*Server
	start func(ctx context.Context, port int) (*Server, error)
	port  int
}

// Restart stops the broker (SIGTERM, as an operator would), waits pause,
// and starts it again on the same port with the same configuration. The
// Broker's Server is the new process afterwards.
func (b *Broker) Restart(ctx context.Context, pause time.Duration) error {
	if err := b.Server.Stop(); err != nil {
		return err
	}
	select {
	case <-time.After(pause):
	case <-ctx.Done():
		return ctx.Err()
	}
	s, err := b.start(ctx, b.port)
	if err != nil {
		return err
	}
	b.Server = s
	return nil
}

// Kill is Restart with SIGKILL: the broker dies as in a crash, saying
// nothing to its clients (the kernel closes their connections), and starts
// again after pause on the same port.
func (b *Broker) Kill(ctx context.Context, pause time.Duration) error {
	b.Server.stopSignal = syscall.SIGKILL
	return b.Restart(ctx, pause)
}

// mosquittoSpec is mosquitto's: ready within BrokerReadyTimeout, the port
// taken when its log says so.
var mosquittoSpec = spec{name: "mosquitto", bin: "mosquitto", paths: MosquittoPaths,
	ready: BrokerReadyTimeout, poll: brokerPollInterval, inUse: []string{"Address already in use"}}

// StartMosquitto starts a private mosquitto (Debian's package) on
// 127.0.0.1 and blocks until it is ready, or until it failed,
// BrokerReadyTimeout passed or ctx was done. ctx governs the start only:
// stop it with Stop (SIGTERM, then SIGKILL to its process group).
//
// The broker gets a fresh directory under os.TempDir() (Dir) holding
// mosquitto.conf, the password file when asked for, and mosquitto.log (its
// stderr; ErrorLog). It runs in the foreground, persistence off, logging
// connections, with max_connections from opts, and with its open-file limit
// raised to opts.NoFile. Addr is "127.0.0.1:PORT" and URL "mqtt://"+Addr.
// It is ready when its log says it is running (so it bound the port
// itself) and it answers an MQTT CONNECT with a CONNACK, while the process
// started here is still running. A port found taken is retried with
// another, 5 ports in all.
func StartMosquitto(ctx context.Context, opts MosquittoOptions) (*Broker, error) {
	return startBroker(ctx, opts.Port, func(ctx context.Context, port int) (*Server, error) {
		return mosquittoSpec.start(ctx, port, nil, func(_ context.Context, bin, dir string, port int) (launch, error) {
			return mosquittoConfigure(bin, dir, port, opts)
		})
	})
}

// startBroker starts a Broker with start, on port (0: a free one), and
// keeps start for Restart on the port it got.
func startBroker(ctx context.Context, port int, start func(ctx context.Context, port int) (*Server, error)) (*Broker, error) {
	s, err := start(ctx, port)
	if err != nil {
		return nil, err
	}
	port, _ = strconv.Atoi(s.Addr[strings.LastIndexByte(s.Addr, ':')+1:])
	return &Broker{Server: s, start: start, port: port}, nil
}

// mosquittoConfigure writes mosquitto.conf (and the password file) into
// dir.
func mosquittoConfigure(bin, dir string, port int, opts MosquittoOptions) (launch, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	maxConn := opts.MaxConnections
	if maxConn <= 0 {
		maxConn = -1
	}
	conf := []string{
		"# private mosquitto config: MQTT on loopback, no persistence",
		"per_listener_settings false",
		"listener " + strconv.Itoa(port) + " 127.0.0.1",
		"persistence false",
		"log_dest stderr",
		"log_type error", "log_type warning", "log_type notice", "log_type information",
		"connection_messages true",
		"max_connections " + strconv.Itoa(maxConn),
		// Queue QoS 1/2 deliveries of slow subscribers rather than drop
		// them (the default keeps 1,000 per client).
		"max_queued_messages 100000",
		"max_inflight_messages 0",
	}
	if opts.Username != "" {
		pw := filepath.Join(dir, "passwd")
		if err := writeMosquittoPasswords(bin, pw, opts.Username, opts.Password); err != nil {
			return launch{}, err
		}
		conf = append(conf, "allow_anonymous false", "password_file "+pw)
	} else {
		conf = append(conf, "allow_anonymous true")
	}
	confPath := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return launch{}, err
	}
	logPath := filepath.Join(dir, "mosquitto.log")
	return launch{args: []string{"-c", confPath}, out: logPath, addr: addr, url: "mqtt://" + addr, noFile: noFile(opts.NoFile),
		probe: func(ctx context.Context) error {
			if !logContains(logPath, " running") {
				return errors.New("no log line saying the broker runs")
			}
			return mqttProbe(ctx, addr)
		}}, nil
}

// writeMosquittoPasswords makes a password file with mosquitto_passwd
// (from the same package as mosquitto), readable by the broker's user.
func writeMosquittoPasswords(bin, path, user, pass string) error {
	tool, err := FindBinary("mosquitto_passwd", filepath.Join(filepath.Dir(bin), "mosquitto_passwd"), "/usr/bin/mosquitto_passwd")
	if err != nil {
		return err
	}
	// -b takes the password as an argument: acceptable for the throwaway
	// test accounts this package makes.
	out, err := exec.Command(tool, "-c", "-b", path, user, pass).CombinedOutput()
	if err != nil {
		return fmt.Errorf("testenv: mosquitto_passwd: %v: %s", err, out)
	}
	return os.Chmod(path, 0o644)
}

// mqttProbe sends an MQTT 3.1.1 CONNECT and waits for any CONNACK.
func mqttProbe(ctx context.Context, addr string) error {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	id := "throng-testenv-probe"
	pkt := []byte{0x10, byte(12 + len(id)), 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 10, 0, byte(len(id))}
	if _, err := c.Write(append(pkt, id...)); err != nil {
		return err
	}
	var ack [4]byte
	if _, err := c.Read(ack[:]); err != nil {
		return err
	}
	if ack[0] != 0x20 {
		return fmt.Errorf("answer %x is not a CONNACK", ack)
	}
	c.Write([]byte{0xe0, 0})
	return nil
}

// noFile is a broker's open-file limit: n, or DefaultBrokerNoFile when n
// is 0.
func noFile(n int) int {
	if n <= 0 {
		return DefaultBrokerNoFile
	}
	return n
}

// raiseNoFile raises a started server's open-file limit (soft and hard) to
// n, or to what the system allows. Go raises its own soft limit but gives
// children the original one, often 1,024: too few for thousands of
// subscribers.
func raiseNoFile(pid, n int) {
	lim := unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err == nil {
		return
	}
	var cur unix.Rlimit
	if unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &cur) == nil && cur.Cur < cur.Max {
		lim = unix.Rlimit{Cur: min(uint64(n), cur.Max), Max: cur.Max}
		unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil)
	}
}

// Mosquitto starts a private mosquitto for the test with StartMosquitto and
// registers t.Cleanup to stop it; it skips or fails the test as
// RequireBinary does when mosquitto is not installed.
func Mosquitto(t testing.TB, opts MosquittoOptions) *Broker {
	t.Helper()
	return started(t, &mosquittoSpec, func(ctx context.Context) (*Broker, error) { return StartMosquitto(ctx, opts) })
}
