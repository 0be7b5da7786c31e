package mail

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// account is one user's mail.
type account struct {
	name     string
	password string
	mu       sync.Mutex
	boxes    map[string]*mailbox // by canonical name (INBOX upper-case)
}

// canonical spells INBOX in upper case, whatever the case given.
func canonical(name string) string {
	if strings.EqualFold(name, "INBOX") {
		return "INBOX"
	}
	return name
}

// Store is the embedded server's memory backend: accounts, their
// mailboxes and messages, and the distribution lists.
type Store struct {
	mu       sync.RWMutex
	users    map[string]*account // by log-on name
	lists    map[string][]string // lower-case list address -> member addresses
	auto     bool                // unknown users are created at their first log-on
	validity atomic.Uint32
}

// NewStore returns an empty store. With auto, an unknown user's first
// log-on creates the account with the password it gave, and mail to an
// unknown address creates the account (its first log-on then sets the
// password).
func NewStore(auto bool) *Store {
	s := &Store{users: map[string]*account{}, lists: map[string][]string{}, auto: auto}
	s.validity.Store(uint32(time.Now().Unix()))
	return s
}

func (s *Store) newAccount(name, password string) *account {
	a := &account{name: name, password: password, boxes: map[string]*mailbox{}}
	a.boxes["INBOX"] = s.newMailbox("INBOX")
	return a
}

func (s *Store) newMailbox(name string) *mailbox {
	return &mailbox{name: name, uidValidity: s.validity.Add(1), uidNext: 1, watchers: map[chan struct{}]struct{}{}}
}

// Provision makes exactly these accounts exist, each with this password
// and an empty INBOX only, and replaces the lists (address -> members).
// Strict mode follows: unknown users are refused from then on.
func (s *Store) Provision(users []string, password string, lists map[string][]string) error {
	if password == "" {
		return errors.New("an empty password")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users = make(map[string]*account, len(users))
	for _, u := range users {
		s.users[u] = s.newAccount(u, password)
	}
	s.lists = make(map[string][]string, len(lists))
	for k, v := range lists {
		s.lists[strings.ToLower(k)] = v
	}
	s.auto = false
	return nil
}

// errAuth is a refused log-on.
var errAuth = errors.New("authentication failed")

// login returns the account for name and password.
func (s *Store) login(name, password string) (*account, error) {
	s.mu.RLock()
	a := s.users[name]
	auto := s.auto
	s.mu.RUnlock()
	if auto && name != "" && password != "" && (a == nil || a.password == "") {
		s.mu.Lock()
		if a = s.users[name]; a == nil {
			a = s.newAccount(name, password)
			s.users[name] = a
		} else if a.password == "" {
			a.password = password // created by mail sent to it: the first log-on sets it
		}
		s.mu.Unlock()
	}
	if a == nil || a.password == "" || a.password != password {
		return nil, errAuth
	}
	return a, nil
}

// resolve returns the accounts an SMTP recipient reaches: a list's
// members or the account named by the address's local part (any domain).
func (s *Store) resolve(addr string) []*account {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if members, ok := s.lists[strings.ToLower(addr)]; ok {
		var out []*account
		for _, m := range members {
			if a := s.users[localPart(m)]; a != nil {
				out = append(out, a)
			}
		}
		return out
	}
	if a := s.users[localPart(addr)]; a != nil {
		return []*account{a}
	}
	if !s.auto || localPart(addr) == "" || strings.ContainsAny(localPart(addr), " \"") {
		return nil
	}
	// Never provisioned: mail creates the account, its first log-on sets
	// the password.
	s.mu.RUnlock()
	s.mu.Lock()
	a := s.users[localPart(addr)]
	if a == nil {
		a = s.newAccount(localPart(addr), "")
		s.users[localPart(addr)] = a
	}
	s.mu.Unlock()
	s.mu.RLock()
	return []*account{a}
}

func localPart(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[:i]
	}
	return addr
}

// deliver stores data in the INBOX of every account once.
func deliver(accounts []*account, data []byte) {
	seen := make(map[*account]bool, len(accounts))
	now := time.Now()
	for _, a := range accounts {
		if seen[a] {
			continue
		}
		seen[a] = true
		a.mu.Lock()
		a.boxes["INBOX"].add(&message{date: now, body: body{data: data}})
		a.mu.Unlock()
	}
}

// Counts reports the number of accounts and of messages, synthesised ones
// included (for tests; Stored counts the stored ones).
func (s *Store) Counts() (users, messages int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, a := range s.users {
		a.mu.Lock()
		for _, b := range a.boxes {
			messages += b.count()
		}
		a.mu.Unlock()
	}
	return len(s.users), messages
}

// Synthesize makes the mailbox name of user (created when missing, and
// empty: Provision leaves every account so) hold count messages that are
// never stored: message j, UID j+1, is gen(dst, j) appended to dst,
// generated each time it is read, with internal date date and the flags
// named (like `\Seen`) until a client changes them. gen must be safe for
// concurrent use and give the same bytes for the same j every time.
// Everything a client does to these messages (flags, expunge, copy, move)
// is kept beside them, as for stored ones. It returns the mailbox's
// UIDVALIDITY and UIDNEXT.
func (s *Store) Synthesize(user, name string, count int, date time.Time, flags []string, gen func(dst []byte, j int) []byte) (uidValidity, uidNext uint32, err error) {
	if count < 0 || count >= 1<<31 || gen == nil {
		return 0, 0, fmt.Errorf("synthesize %s/%s: bad count %d or no generator", user, name, count)
	}
	var bits uint8
	for _, f := range flags {
		b := flagBit([]byte(strings.ToUpper(f)))
		if b == 0 {
			return 0, 0, fmt.Errorf("synthesize %s/%s: unknown flag %q", user, name, f)
		}
		bits |= b
	}
	s.mu.RLock()
	a := s.users[user]
	s.mu.RUnlock()
	if a == nil {
		return 0, 0, fmt.Errorf("synthesize %s/%s: no such account", user, name)
	}
	name = canonical(name)
	a.mu.Lock()
	defer a.mu.Unlock()
	box := a.boxes[name]
	if box == nil {
		box = s.newMailbox(name)
		a.boxes[name] = box
	}
	if box.uidNext != 1 {
		return 0, 0, fmt.Errorf("synthesize %s/%s: the mailbox is not empty", user, name)
	}
	box.recipe = &recipe{count: count, date: date, flags: bits, gen: gen}
	box.live = count
	box.uidNext = uint32(count) + 1
	box.changed()
	return box.uidValidity, box.uidNext, nil
}

// Stored reports the messages held as bytes (delivered, appended, or
// copied from stored ones) and their bytes, a body shared by several
// messages counted in each; synthesised messages hold none.
func (s *Store) Stored() (messages int, bytes int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, a := range s.users {
		a.mu.Lock()
		for _, b := range a.boxes {
			for _, m := range b.msgs {
				if m.src == nil {
					messages++
					bytes += int64(len(m.data))
				}
			}
		}
		a.mu.Unlock()
	}
	return messages, bytes
}
