package files

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// target is where the files are: a share on an SMB server, or a local (or
// mounted) directory.
type target struct {
	smb bool
	// SMB: smb://[DOMAIN;]USER@HOST[:PORT]/SHARE[/DIR...]
	user, domain string
	host, addr   string // host name, host:port
	share        string
	// root is the population's directory: on the share ("" = its top,
	// slash-separated), or an absolute local path.
	root string
	text string // the target as shown in messages (never a password)
}

// DefaultPort is the SMB port when the target names none.
const DefaultPort = "445"

// parseTarget reads smb://[DOMAIN;]USER@HOST[:PORT]/SHARE[/DIR...] or
// file:///ABSOLUTE/PATH.
func parseTarget(s string) (*target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("target %q: %v", s, err)
	}
	switch u.Scheme {
	case "smb":
		return parseSMB(u, s)
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("target %q: a file:// URL names a local path, like file:///mnt/share/dir (got host %q)", s, u.Host)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return nil, fmt.Errorf("target %q: a file:// URL needs an absolute path, like file:///mnt/share/dir", s)
		}
		return &target{root: filepath.Clean(filepath.FromSlash(u.Path)), text: "file://" + u.Path}, nil
	}
	return nil, fmt.Errorf("target %q: the files family reads smb://USER@HOST[:PORT]/SHARE[/DIR] (SMB2/3) or file:///PATH (a local or mounted directory)", s)
}

func parseSMB(u *url.URL, s string) (*target, error) {
	if u.User == nil || u.User.Username() == "" {
		return nil, fmt.Errorf("target %s: name the SMB user, like smb://user@%s%s", u.Redacted(), u.Host, u.EscapedPath())
	}
	if _, has := u.User.Password(); has {
		return nil, fmt.Errorf("target %s holds a password: remove it and give files.password as ${NAME} (an environment variable) or ${file:PATH}", u.Redacted())
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("target %q has no host", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("target %s: no query or fragment is allowed", u.Redacted())
	}
	t := &target{smb: true, user: u.User.Username(), host: u.Hostname()}
	if d, usr, ok := strings.Cut(t.user, ";"); ok {
		t.domain, t.user = d, usr
	}
	port := u.Port()
	if port == "" {
		port = DefaultPort
	}
	t.addr = net.JoinHostPort(t.host, port)
	p := strings.Trim(path.Clean("/"+u.Path), "/")
	if p == "" {
		return nil, fmt.Errorf("target %s: name the share, like smb://%s@%s/SHARE/DIR", u.Redacted(), t.user, u.Host)
	}
	t.share, t.root, _ = strings.Cut(p, "/")
	if strings.ContainsAny(t.share+t.root, `\:*?"<>|`) {
		return nil, fmt.Errorf("target %s: a share or directory name cannot hold \\ : * ? \" < > |", u.Redacted())
	}
	t.text = "smb://" + u.User.Username() + "@" + u.Host + "/" + p
	return t, nil
}
