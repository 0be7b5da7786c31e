package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"sync"
	"time"

	smb2 "github.com/cloudsoda/go-smb2"

	"github.com/throng-io/throng/internal/driver"
)

// smbConn is one logged-on SMB connection with the share mounted.
type smbConn struct {
	wire  *wireConn
	sess  *smb2.Session
	share *smb2.Share
	once  sync.Once
}

// dialSMB connects, negotiates, logs on and mounts the share. The error
// carries its class: dial (no connection), auth (the user or password was
// refused), status_4xx (no such share), protocol, timeout.
func (c *Config) dialSMB(ctx context.Context) (*smbConn, error) {
	t := c.tgt
	d := net.Dialer{Timeout: c.Timeout.D(), KeepAlive: 30 * time.Second}
	tcp, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, driver.Errorf(driver.Dial, fmt.Errorf("connect %s: %w", t.addr, unwrapOp(err)))
	}
	if tc, ok := tcp.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	w := newWireConn(tcp)
	dialer := &smb2.Dialer{
		Negotiator: smb2.Negotiator{RequireMessageSigning: c.Signing == "required", SpecifiedDialect: c.dialect},
		Initiator:  &smb2.NTLMInitiator{User: t.user, Password: c.password, Domain: t.domain},
	}
	var sess *smb2.Session
	err = contained(w, "log on", "", func() (err error) {
		sess, err = dialer.DialConn(ctx, w, t.host)
		return err
	})
	if err != nil {
		tcp.Close()
		return nil, classifyLogon(err, c)
	}
	// Every request the library sends from here on would be encrypted if
	// the server asked: refuse before one is sent when it cannot be (no
	// log-off either, for the same reason).
	if why := w.cannotEncrypt(); refuseUnencryptable && why != "" {
		tcp.Close()
		return nil, driver.Errorf(driver.Protocol, errors.New(why))
	}
	var sh *smb2.Share
	err = contained(w, "mount share", t.share, func() (err error) {
		sh, err = sess.WithContext(ctx).Mount(`\\` + t.host + `\` + t.share)
		return err
	})
	if err != nil {
		if !w.broken.Load() {
			contained(w, "log off", "", func() error { return sess.Logoff() })
		}
		tcp.Close()
		return nil, classifyMount(err, t.share)
	}
	conn := &smbConn{wire: w, sess: sess, share: sh}
	if why := w.cannotEncrypt(); refuseUnencryptable && why != "" {
		w.broken.Store(true) // no umount, no log-off: they would be encrypted
		conn.close()
		return nil, driver.Errorf(driver.Protocol, errors.New(why))
	}
	if c.Encryption == "required" && !w.encrypted.Load() {
		conn.close()
		return nil, driver.Errorf(driver.Protocol, errors.New("encryption: required, but the server did not encrypt the session (Samba: smb encrypt = required; dialect 3.0 or later)"))
	}
	return conn, nil
}

// EventConnect is the name of the event of a user's connection to the
// SMB server: connect, negotiate, session setup (the log-on) and tree
// connect, timed from the first try to the share mounted (retries while
// a restarting server refuses included), counted in the phase it began
// in, with the failure's class (auth: the user or password was refused).
// The action that needed the connection carries its time and bytes too;
// the event carries none of the bytes.
const EventConnect = "connect"

// logConnect records a connection that began at t0 and ended with err as
// the event "connect", unless the run is stopping (the action's own
// timeout is a failure of the connect).
func (c *Config) logConnect(ctx context.Context, t0 time.Time, err error) {
	if err != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return
	}
	c.mu.Lock()
	sink := c.sink
	c.mu.Unlock()
	if sink == nil {
		return
	}
	ev := c.EventActions()
	sink.Event(len(ev)-1, t0, time.Since(t0), 0, 0, driver.Classify(err), err)
}

// refuseUnencryptable is true but in the test that checks what contains
// the library's failure when throng's own check is skipped.
var refuseUnencryptable = true

// contained runs fn, one call into the SMB library over connection w. A
// panic in the library (a nil cipher, a bad slice of a malformed answer)
// never stops the run: it becomes an error of class protocol that says
// so, and the connection is marked broken, so that it is dropped without
// another request (the library's state is not trusted after it).
//
// op and name say what was being done ("read", "f00000001.bin"); they are
// joined only for the message of a panic.
func contained(w *wireConn, op, name string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.broken.Store(true)
			what := op
			if name != "" {
				what += " " + name
			}
			err = driver.Errorf(driver.Protocol, fmt.Errorf("%s: the SMB library failed (%v); throng dropped the connection "+
				"(a fault of github.com/cloudsoda/go-smb2 with this server's answers: please report it with the server's settings)", what, r))
		}
	}()
	return fn()
}

// close logs off (briefly: the server may be gone) and closes the socket.
// It is safe to call more than once and from several goroutines.
func (s *smbConn) close() {
	s.once.Do(func() {
		if !s.wire.broken.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			contained(s.wire, "log off", "", func() error {
				s.share.WithContext(ctx).Umount()
				return s.sess.WithContext(ctx).Logoff()
			})
			cancel()
		}
		s.wire.Close()
	})
}

// fs is the connection's share as a file system under root.
func (s *smbConn) fs(root string) smbFS { return smbFS{s.share, root, s.wire} }

// smbFS runs operations on a mounted share, under the target's directory
// root (slash-separated, "" for the share's top). How the server treats
// links on the share is its own (Samba: follow symlinks, wide links).
// Every call into the library is contained: a panic there is an error of
// class protocol.
type smbFS struct {
	sh   *smb2.Share
	root string
	w    *wireConn
}

// path is name's path on the share.
func (f smbFS) path(name string) string { return path.Join(f.root, name) }

var _ fsys = smbFS{}

func (f smbFS) read(ctx context.Context, name string, off, max int64, buf []byte, fn func(int64, []byte)) (total int64, err error) {
	err = contained(f.w, "read", name, func() error {
		fl, err := f.sh.WithContext(ctx).Open(f.path(name))
		if err != nil {
			return err
		}
		for total < max {
			p := buf[:min(int64(len(buf)), max-total)]
			n, rerr := fl.ReadAt(p, off+total)
			if n > 0 {
				fn(off+total, p[:n])
			}
			total += int64(n)
			if rerr == io.EOF || (rerr == nil && n < len(p)) {
				break
			}
			if rerr != nil {
				fl.Close()
				return rerr
			}
		}
		return fl.Close()
	})
	return total, err
}

func (f smbFS) create(ctx context.Context, name string, p []byte) error {
	return contained(f.w, "create", name, func() error {
		fl, err := f.sh.WithContext(ctx).OpenFile(f.path(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		n, err := fl.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		if cerr := fl.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

func (f smbFS) writeAt(ctx context.Context, name string, off int64, p []byte) error {
	return contained(f.w, "write", name, func() error {
		fl, err := f.sh.WithContext(ctx).OpenFile(f.path(name), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		n, err := fl.WriteAt(p, off)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		if cerr := fl.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

func (f smbFS) openClose(ctx context.Context, name string) error {
	return contained(f.w, "open", name, func() error {
		fl, err := f.sh.WithContext(ctx).Open(f.path(name))
		if err != nil {
			return err
		}
		return fl.Close()
	})
}

func (f smbFS) stat(ctx context.Context, name string) (size int64, err error) {
	err = contained(f.w, "stat", name, func() error {
		fi, err := f.sh.WithContext(ctx).Stat(f.path(name))
		if err == nil {
			size = fi.Size()
		}
		return err
	})
	return size, err
}

// statDir reports whether name exists and is a directory.
func (f smbFS) statDir(ctx context.Context, name string) (dir bool, err error) {
	err = contained(f.w, "stat", dirName(name), func() error {
		fi, err := f.sh.WithContext(ctx).Stat(f.path(name))
		if err == nil {
			dir = fi.IsDir()
		}
		return err
	})
	return dir, err
}

func (f smbFS) list(ctx context.Context, dir string) (out []entry, err error) {
	err = contained(f.w, "list", dirName(dir), func() error {
		fis, err := f.sh.WithContext(ctx).ReadDir(f.path(dir))
		if err != nil {
			return err
		}
		out = make([]entry, 0, len(fis))
		for _, fi := range fis {
			if n := fi.Name(); n == "." || n == ".." {
				continue
			}
			out = append(out, entry{name: fi.Name(), size: fi.Size(), dir: fi.IsDir()})
		}
		return nil
	})
	return out, err
}

func (f smbFS) remove(ctx context.Context, name string) error {
	return contained(f.w, "remove", name, func() error { return f.sh.WithContext(ctx).Remove(f.path(name)) })
}

func (f smbFS) rename(ctx context.Context, from, to string) error {
	return contained(f.w, "rename", from, func() error { return f.sh.WithContext(ctx).Rename(f.path(from), f.path(to)) })
}

func (f smbFS) mkdirAll(ctx context.Context, dir string) error {
	p := f.path(dir)
	if p == "" || p == "." {
		return nil
	}
	return contained(f.w, "create directory", dir, func() error { return f.sh.WithContext(ctx).MkdirAll(p, 0o755) })
}

func (f smbFS) removeAll(ctx context.Context, dir string) error {
	if dir == "" || dir == "." {
		return errors.New("refusing to remove the target's directory itself")
	}
	return contained(f.w, "remove", dir, func() error { return f.sh.WithContext(ctx).RemoveAll(f.path(dir)) })
}
