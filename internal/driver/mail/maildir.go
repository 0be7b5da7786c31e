package mail

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/driver/mail/msggen"
)

// maildirFolder is the directory of a folder in Maildir++ layout (the
// INBOX is the root, other folders are ".Name").
func maildirFolder(root, name string) string {
	if name == Inbox {
		return root
	}
	return filepath.Join(root, "."+strings.ReplaceAll(name, "/", "."))
}

// populateMaildir writes user id's mailbox directly as maildir files
// (the server assigns UIDs when it next opens the folders). The user's
// maildir is removed first.
func (c *Config) populateMaildir(id int, seed uint64) (n, bytes int64, err error) {
	user := c.UserName(id)
	root := strings.ReplaceAll(c.Population.Maildir, "%u", user)
	uid, gid := -1, -1
	if c.Population.MaildirOwner != "" {
		uid, gid, _ = parseOwner(c.Population.MaildirOwner)
	}
	if err := os.RemoveAll(root); err != nil {
		return 0, 0, err
	}
	mkdir := func(p string) error {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
		if uid >= 0 {
			return os.Chown(p, uid, gid)
		}
		return nil
	}
	for _, p := range []string{filepath.Dir(root), root} {
		if err := mkdir(p); err != nil {
			return 0, 0, err
		}
	}
	buf := make([]byte, 0, 1<<20)
	for _, f := range c.pop.folders {
		dir := maildirFolder(root, f.name)
		for _, sub := range []string{"", "cur", "new", "tmp"} {
			if err := mkdir(filepath.Join(dir, sub)); err != nil {
				return n, bytes, err
			}
		}
		for j := range f.count {
			buf = c.popMessage(buf[:0], seed, id, f, j)
			t := msggen.PopDate.Unix() + int64(j)*37*60
			name := strconv.FormatInt(t, 10) + ".M" + strconv.Itoa(j) + "P" + strconv.Itoa(f.tag) + ".throng,S=" +
				strconv.Itoa(len(buf)) + ":2,S"
			p := filepath.Join(dir, "cur", name)
			if err := os.WriteFile(p, buf, 0o600); err != nil {
				return n, bytes, fmt.Errorf("maildir: %w", err)
			}
			if uid >= 0 {
				if err := os.Chown(p, uid, gid); err != nil {
					return n, bytes, err
				}
			}
			n++
			bytes += int64(len(buf))
		}
	}
	return n, bytes, nil
}
