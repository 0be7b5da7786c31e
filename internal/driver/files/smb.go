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
	sess, err := dialer.DialConn(ctx, w, t.host)
	if err != nil {
		tcp.Close()
		return nil, classifyLogon(err, c)
	}
	sh, err := sess.WithContext(ctx).Mount(`\\` + t.host + `\` + t.share)
	if err != nil {
		sess.Logoff()
		tcp.Close()
		return nil, classifyMount(err, t.share)
	}
	conn := &smbConn{wire: w, sess: sess, share: sh}
	if c.Encryption == "required" && !w.encrypted.Load() {
		conn.close()
		return nil, driver.Errorf(driver.Protocol, errors.New("encryption: required, but the server did not encrypt the session (Samba: smb encrypt = required; dialect 3.0 or later)"))
	}
	return conn, nil
}

// close logs off (briefly: the server may be gone) and closes the socket.
// It is safe to call more than once and from several goroutines.
func (s *smbConn) close() {
	s.once.Do(func() {
		if !s.wire.broken.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s.share.WithContext(ctx).Umount()
			s.sess.WithContext(ctx).Logoff()
			cancel()
		}
		s.wire.Close()
	})
}

// smbFS runs operations on a mounted share, under the target's directory
// root (slash-separated, "" for the share's top). How the server treats
// links on the share is its own (Samba: follow symlinks, wide links).
type smbFS struct {
	sh   *smb2.Share
	root string
}

// path is name's path on the share.
func (f smbFS) path(name string) string { return path.Join(f.root, name) }

var _ fsys = smbFS{}

func (f smbFS) read(ctx context.Context, name string, off, max int64, buf []byte, fn func(int64, []byte)) (int64, error) {
	fl, err := f.sh.WithContext(ctx).Open(f.path(name))
	if err != nil {
		return 0, err
	}
	var total int64
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
			return total, rerr
		}
	}
	return total, fl.Close()
}

func (f smbFS) create(ctx context.Context, name string, p []byte) error {
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
}

func (f smbFS) writeAt(ctx context.Context, name string, off int64, p []byte) error {
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
}

func (f smbFS) openClose(ctx context.Context, name string) error {
	fl, err := f.sh.WithContext(ctx).Open(f.path(name))
	if err != nil {
		return err
	}
	return fl.Close()
}

func (f smbFS) stat(ctx context.Context, name string) (int64, error) {
	fi, err := f.sh.WithContext(ctx).Stat(f.path(name))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f smbFS) list(ctx context.Context, dir string) ([]entry, error) {
	fis, err := f.sh.WithContext(ctx).ReadDir(f.path(dir))
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(fis))
	for _, fi := range fis {
		if n := fi.Name(); n == "." || n == ".." {
			continue
		}
		out = append(out, entry{name: fi.Name(), size: fi.Size(), dir: fi.IsDir()})
	}
	return out, nil
}

func (f smbFS) remove(ctx context.Context, name string) error {
	return f.sh.WithContext(ctx).Remove(f.path(name))
}

func (f smbFS) rename(ctx context.Context, from, to string) error {
	return f.sh.WithContext(ctx).Rename(f.path(from), f.path(to))
}

func (f smbFS) mkdirAll(ctx context.Context, dir string) error {
	p := f.path(dir)
	if p == "" || p == "." {
		return nil
	}
	return f.sh.WithContext(ctx).MkdirAll(p, 0o755)
}

func (f smbFS) removeAll(ctx context.Context, dir string) error {
	if dir == "" || dir == "." {
		return errors.New("refusing to remove the target's directory itself")
	}
	return f.sh.WithContext(ctx).RemoveAll(f.path(dir))
}
