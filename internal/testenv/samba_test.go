package testenv

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	smb2 "github.com/cloudsoda/go-smb2"
)

// These tests run the real smbd; they skip when it is not installed or not
// run as root (and fail instead when CI is set, see Samba).

// logOn opens a session on s's share with password.
func logOn(t *testing.T, s *SambaServer, password string, dialect uint16) (*smb2.Share, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { conn.Close() })
	d := &smb2.Dialer{Negotiator: smb2.Negotiator{SpecifiedDialect: dialect}, Initiator: &smb2.NTLMInitiator{User: s.User, Password: password}}
	sess, err := d.DialConn(t.Context(), conn, "127.0.0.1")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { sess.Logoff() })
	return sess.Mount(`\\127.0.0.1\` + s.Share)
}

func TestSambaServesShare(t *testing.T) {
	start := time.Now()
	s := Samba(t, SambaOptions{})
	t.Logf("ready in %v: %s pid %d", time.Since(start), s.URL, s.PID)
	if s.Name != "samba" || !strings.HasPrefix(s.Addr, "127.0.0.1:") || s.URL != "smb://throng@"+s.Addr+"/share" || !s.Alive() {
		t.Fatalf("Name %q Addr %q URL %q Alive %v", s.Name, s.Addr, s.URL, s.Alive())
	}
	sh, err := logOn(t, s, s.Password, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("written over SMB\n")
	if err := sh.WriteFile("hello.txt", data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := sh.ReadFile("hello.txt")
	if err != nil || string(back) != string(data) {
		t.Fatalf("read back %q, %v", back, err)
	}
	// On the server's disk, owned by the share's user.
	fi, err := os.Stat(filepath.Join(s.ShareDir, "hello.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != SambaUID {
		t.Errorf("the file belongs to uid %d, want %d", st.Uid, SambaUID)
	}
	if _, err := logOn(t, s, s.Password+"x", 0); err == nil {
		t.Error("a wrong password was accepted")
	}
	conf, _ := os.ReadFile(filepath.Join(s.Dir, "smb.conf"))
	for _, want := range []string{"smb ports = " + s.Addr[len("127.0.0.1:"):], "interfaces = 127.0.0.1", "bind interfaces only = yes",
		"disable netbios = yes", "rpc start on demand helpers = no", "server min protocol = SMB2_02", "server max protocol = SMB3_11",
		"path = " + s.ShareDir, "passdb backend = tdbsam:" + s.Dir} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("smb.conf lacks %q", want)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, "password")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("password file: %v %v", err, fi)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Dir, "password")); strings.TrimSpace(string(b)) != s.Password {
		t.Error("the password file does not hold the password")
	}
}

func TestSambaOptions(t *testing.T) {
	s := Samba(t, SambaOptions{MaxProtocol: "SMB2_10", Signing: "mandatory", ShareOptions: []string{"case sensitive = yes"}})
	if _, err := logOn(t, s, s.Password, 0x0311); err == nil {
		t.Error("SMB 3.1.1 accepted by a server with max protocol SMB2_10")
	}
	if _, err := logOn(t, s, s.Password, 0x0210); err != nil {
		t.Errorf("SMB 2.1: %v", err)
	}
	conf, _ := os.ReadFile(filepath.Join(s.Dir, "smb.conf"))
	for _, want := range []string{"server signing = mandatory", "   case sensitive = yes\n"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("smb.conf lacks %q", want)
		}
	}
}

func TestSambaRejectsBadOptions(t *testing.T) {
	for _, o := range []SambaOptions{
		{MaxProtocol: "NT1"}, {MinProtocol: "SMB4"}, {Signing: "yes"}, {Encrypt: "always"},
		{Global: []string{"a = b\n[evil]"}}, {ShareOptions: []string{"[x]"}}, {ShareDir: "/no/such/dir"},
	} {
		if s, err := StartSamba(context.Background(), o); err == nil {
			s.Stop()
			t.Errorf("%+v: started", o)
		}
	}
}

// Two servers side by side serve the same directory: the same files through
// both.
func TestSambaTwoServersOneShare(t *testing.T) {
	share, err := os.MkdirTemp("", "throng-samba-share-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(share)
	os.Chmod(share, 0o755)
	a := Samba(t, SambaOptions{MaxProtocol: "SMB2_02", ShareDir: share})
	b := Samba(t, SambaOptions{Encrypt: "required", ShareDir: share})
	if a.Addr == b.Addr || a.Password == b.Password {
		t.Fatalf("addresses %s %s", a.Addr, b.Addr)
	}
	sa, err := logOn(t, a, a.Password, 0)
	if err != nil {
		t.Fatal(err)
	}
	sa.WriteFile("shared.txt", []byte("from A"), 0o644)
	sb, err := logOn(t, b, b.Password, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sb.ReadFile("shared.txt"); err != nil || string(got) != "from A" {
		t.Errorf("through B: %q %v", got, err)
	}
	a.Stop()
	if _, err := os.Stat(filepath.Join(share, "shared.txt")); err != nil {
		t.Errorf("Stop removed a given ShareDir: %v", err)
	}
}

func TestSambaStopCleansUp(t *testing.T) {
	s := Samba(t, SambaOptions{})
	if _, err := logOn(t, s, s.Password, 0); err != nil { // a connection process too
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(start))
	if _, err := os.Stat("/proc/" + strconv.Itoa(s.PID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid %d still in /proc after Stop (%v)", s.PID, err)
	}
	if n := processesInGroup(t, s.PID); n != 0 {
		t.Errorf("%d processes left in smbd's group", n)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Dir %s still exists", s.Dir)
	}
	if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections", s.Addr)
	}
}

func TestSambaRestart(t *testing.T) {
	s := Samba(t, SambaOptions{})
	sh, err := logOn(t, s, s.Password, 0)
	if err != nil {
		t.Fatal(err)
	}
	sh.WriteFile("kept.txt", []byte("kept"), 0o644)
	old := s.PID
	if err := s.Restart(t.Context(), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if s.PID == old || !s.Alive() {
		t.Fatalf("pid %d (was %d), alive %v", s.PID, old, s.Alive())
	}
	if _, err := sh.ReadFile("kept.txt"); err == nil {
		t.Error("the old connection survived the restart")
	}
	sh2, err := logOn(t, s, s.Password, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sh2.ReadFile("kept.txt"); err != nil || string(got) != "kept" {
		t.Errorf("after the restart: %q %v", got, err)
	}
}

// A port held by another listener: the start notices and moves on.
func TestSambaPortTaken(t *testing.T) {
	RequireSamba(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	s, err := startSamba(t.Context(), SambaOptions{}, func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return FreePort()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if calls != 2 || s.Addr == l.Addr().String() {
		t.Errorf("calls %d, Addr %s (taken %d)", calls, s.Addr, taken)
	}
}
