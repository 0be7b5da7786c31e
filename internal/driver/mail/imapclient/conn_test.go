package imapclient

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
)

func dial(t *testing.T, addr string) *Conn {
	t.Helper()
	ic, err := Dial(context.Background(), addr, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ic.Close)
	return ic
}

func msg(subject string) []byte {
	return []byte("From: a@example.test\r\nTo: b@example.test\r\nSubject: " + subject + "\r\n\r\nbody of " + subject + "\r\n")
}

// The client against the embedded server, each operation checked by what
// the server then holds: a wrong password is class auth; APPEND, SELECT's
// counts, FETCH's UIDs, sizes, flags and headers (appended \Seen),
// SEARCH, STORE, MOVE into a
// mailbox CREATE made, UID EXPUNGE; a missing mailbox is class 4xx, a
// malformed command class protocol; bytes are counted both ways.
func TestConn(t *testing.T) {
	srv := mailtest.Embedded(t)
	if err := srv.Provision([]string{"user0001"}, "pw", nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ic := dial(t, srv.IMAPAddr())
	if err := ic.Login(ctx, "user0001", "wrong", false); driver.Classify(err) != driver.Auth {
		t.Fatalf("a wrong password: %v (class %v), want auth", err, driver.Classify(err))
	}
	if err := ic.Login(ctx, "user0001", "pw", true); err != nil {
		t.Fatal(err)
	}
	if err := ic.Create(ctx, "Work"); err != nil {
		t.Fatal(err)
	}
	if err := ic.Create(ctx, "Work"); err != nil {
		t.Errorf("creating a mailbox that exists: %v, want fine", err)
	}
	names, err := ic.List(ctx)
	if err != nil || !slices.Contains(names, "INBOX") || !slices.Contains(names, "Work") {
		t.Fatalf("LIST: %q, %v", names, err)
	}
	msgs := [][]byte{msg("one"), msg("two"), msg("three")}
	if err := ic.Append(ctx, "INBOX", time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), msgs); err != nil {
		t.Fatal(err)
	}
	if err := ic.Select(ctx, "INBOX", false, false); err != nil || ic.Exists != 3 || ic.Mailbox != "INBOX" || ic.UIDValidity == 0 || ic.UIDNext != 4 {
		t.Fatalf("SELECT INBOX: %v, mailbox %q, %d messages, UIDVALIDITY %d, UIDNEXT %d", err, ic.Mailbox, ic.Exists, ic.UIDValidity, ic.UIDNext)
	}
	var got []string
	err = ic.Fetch(ctx, true, "1:*", "(UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS (SUBJECT)])", func(f *Fetched) {
		got = append(got, fmt.Sprintf("%d %d %v %v %s", f.UID, f.Size, f.Seen, f.Deleted, strings.TrimSpace(string(f.Header))))
	})
	want := []string{
		fmt.Sprintf("1 %d true false Subject: one", len(msgs[0])),
		fmt.Sprintf("2 %d true false Subject: two", len(msgs[1])),
		fmt.Sprintf("3 %d true false Subject: three", len(msgs[2])),
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("FETCH: %v\n got %q\nwant %q", err, got, want)
	}
	if uids, err := ic.Search(ctx, []byte("SUBJECT two")); err != nil || !slices.Equal(uids, []uint32{2}) {
		t.Errorf("SEARCH SUBJECT two: %v, %v", uids, err)
	}
	if err := ic.Store(ctx, "1", `\Deleted`); err != nil {
		t.Fatal(err)
	}
	var deleted []uint32
	ic.Fetch(ctx, true, "1:*", "(UID FLAGS)", func(f *Fetched) {
		if f.Deleted {
			deleted = append(deleted, f.UID)
		}
	})
	if !slices.Equal(deleted, []uint32{1}) {
		t.Errorf("after STORE 1 \\Deleted, deleted: %v", deleted)
	}
	if err := ic.Move(ctx, UIDSet([]uint32{2}), "Work"); err != nil {
		t.Fatal(err)
	}
	if err := ic.Remove(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	if err := ic.Select(ctx, "INBOX", true, false); err != nil || ic.Exists != 1 {
		t.Errorf("INBOX after MOVE and removal: %v, %d messages, want 1 (marked deleted, not expunged)", err, ic.Exists)
	}
	if err := ic.Select(ctx, "Work", true, false); err != nil || ic.Exists != 1 {
		t.Errorf("Work after MOVE: %v, %d messages, want 1", err, ic.Exists)
	}
	if err := ic.Select(ctx, "Nowhere", true, false); driver.Classify(err) != driver.Status4xx {
		t.Errorf("SELECT of a missing mailbox: %v (class %v), want 4xx", err, driver.Classify(err))
	}
	if err := ic.Command(ctx, "NOOP", "NOOP"); err != nil {
		t.Errorf("raw NOOP: %v", err)
	}
	if err := ic.Command(ctx, "FROB", "FROB 1 2"); driver.Classify(err) != driver.Protocol {
		t.Errorf("a malformed command: %v (class %v), want protocol", err, driver.Classify(err))
	}
	in, out := ic.In, ic.Out
	if in == 0 || out == 0 {
		t.Fatalf("%d bytes in, %d out", in, out)
	}
	if err := ic.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if ic.Out-out != int64(len("Axx LOGOUT\r\n")) {
		t.Errorf("LOGOUT counted %d bytes out, want %d", ic.Out-out, len("Axx LOGOUT\r\n"))
	}
	if err := ic.Noop(ctx); driver.Classify(err) != driver.IO {
		t.Errorf("a command after LOGOUT: %v (class %v), want io", err, driver.Classify(err))
	}
}

// IDLE: a message appended on another connection is announced (EXISTS)
// to ReadIdle's handler; DONE ends the command, whose completion ends
// ReadIdle without error. A refresh (the read deadline passing) sends
// DONE through the caller and reads on for the completion.
func TestIdle(t *testing.T) {
	srv := mailtest.Embedded(t)
	if err := srv.Provision([]string{"user0001"}, "pw", nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ic, other := dial(t, srv.IMAPAddr()), dial(t, srv.IMAPAddr())
	for _, c := range []*Conn{ic, other} {
		if err := c.Login(ctx, "user0001", "pw", false); err != nil {
			t.Fatal(err)
		}
	}
	if err := ic.Select(ctx, "INBOX", false, false); err != nil || !ic.Has(CapIdle) {
		t.Fatalf("SELECT: %v, IDLE offered %v", err, ic.Has(CapIdle))
	}
	for _, refresh := range []bool{false, true} {
		if err := ic.SendIdle(); err != nil {
			t.Fatal(err)
		}
		exists, refreshed := 0, 0
		if refresh {
			ic.NC.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		} else {
			ic.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
			time.AfterFunc(50*time.Millisecond, func() {
				other.Append(ctx, "INBOX", time.Now(), [][]byte{msg("new")})
			})
		}
		err := ic.ReadIdle(func(u *Untagged) error {
			if u.Kw == "EXISTS" {
				exists++
				ic.SendDone()
			}
			return nil
		}, func() bool {
			refreshed++
			ic.SendDone()
			return true
		})
		switch {
		case err != nil || ic.Broken:
			t.Fatalf("refresh %v: ReadIdle: %v, broken %v", refresh, err, ic.Broken)
		case !refresh && (exists != 1 || refreshed != 0):
			t.Errorf("an append announced %d times, %d refreshes; want 1 and 0", exists, refreshed)
		case refresh && (exists != 0 || refreshed != 1):
			t.Errorf("a refresh: %d announcements, %d refreshes; want 0 and 1", exists, refreshed)
		}
	}
	if err := ic.Noop(ctx); err != nil {
		t.Errorf("a command after IDLE: %v", err)
	}
}
