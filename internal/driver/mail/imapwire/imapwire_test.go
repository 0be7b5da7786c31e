package imapwire

import (
	"bufio"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadLine(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		keep           KeepFunc
		dropped        int64
		err            bool
	}{
		{name: "plain", in: "* 3 EXISTS\r\n", want: "* 3 EXISTS"},
		{name: "lf only", in: "* OK hi\n", want: "* OK hi"},
		{name: "literal kept", in: "* 1 FETCH (BODY[] {5}\r\nhello)\r\n", want: "* 1 FETCH (BODY[] {5}\r\nhello)"},
		{name: "literal plus", in: "a APPEND x {3+}\r\nabc\r\n", want: "a APPEND x {3}\r\nabc"},
		{name: "two literals", in: "a LOGIN {1}\r\nu {2}\r\npw\r\n", want: "a LOGIN {1}\r\nu {2}\r\npw"},
		{name: "literal dropped", in: "* 1 FETCH (BODY[] {10}\r\n0123456789 UID 4)\r\n", want: "* 1 FETCH (BODY[] {!10}\r\n UID 4)",
			keep: KeepUpTo(5), dropped: 10},
		{name: "cut in a literal", in: "* 1 FETCH (BODY[] {10}\r\n0123", err: true},
		{name: "not a literal", in: "* OK {x}\r\n", want: "* OK {x}"},
	} {
		for _, split := range []bool{false, true} {
			var r *bufio.Reader
			if split {
				r = bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(tc.in)), 16)
			} else {
				r = bufio.NewReader(strings.NewReader(tc.in))
			}
			line, total, dropped, err := ReadLine(r, nil, tc.keep, nil, 0)
			if tc.err {
				if err == nil {
					t.Errorf("%s: no error", tc.name)
				}
				continue
			}
			if err != nil || string(line) != tc.want || dropped != tc.dropped || total != int64(len(tc.in)) {
				t.Errorf("%s (split %v): %q %d %d %v", tc.name, split, line, total, dropped, err)
			}
		}
	}
}

func TestReadLineLimits(t *testing.T) {
	r := bufio.NewReader(strings.NewReader(strings.Repeat("x", MaxLine+10) + "\r\n"))
	if _, _, _, err := ReadLine(r, nil, nil, nil, 0); err != ErrLineTooLong {
		t.Errorf("long line: %v", err)
	}
	r = bufio.NewReader(strings.NewReader("a APPEND x {100}\r\n"))
	if _, _, _, err := ReadLine(r, nil, KeepAll, nil, 50); err == nil {
		t.Error("literal above the limit")
	}
	conts := 0
	r = bufio.NewReader(strings.NewReader("a LOGIN {1}\r\nu {2+}\r\npw\r\n"))
	ReadLine(r, nil, KeepAll, func() error { conts++; return nil }, 0)
	if conts != 1 {
		t.Errorf("%d continuations for one synchronizing literal", conts)
	}
}

func TestScanner(t *testing.T) {
	in := `* 12 FETCH (UID 5 FLAGS (\Seen \Deleted) BODY[HEADER.FIELDS (FROM X-A)]<0> {4}` + "\r\nab\r\n" + ` "q\"x" NIL)`
	var s Scanner
	s.Reset([]byte(in))
	var got []string
	for {
		t := s.Next()
		if t.Kind == EOL {
			break
		}
		got = append(got, []string{"EOL", "A", "S", "L", "(", ")", "BAD"}[t.Kind]+":"+string(t.Text))
	}
	want := `A:* A:12 A:FETCH (: A:UID A:5 A:FLAGS (: A:\Seen A:\Deleted ): A:BODY[HEADER.FIELDS (FROM X-A)]<0> L:ab` + "\r\n" + ` S:q"x A:NIL ):`
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	s.Reset([]byte("(a (b c) d) e"))
	if !s.SkipValue(s.Next()) || string(s.Next().Text) != "e" {
		t.Error("SkipValue")
	}
	if n, ok := Number([]byte("4294967296")); !ok || n != 1<<32 {
		t.Error("Number")
	}
	if _, ok := Number([]byte("12a")); ok {
		t.Error("Number accepts 12a")
	}
	if !EqualFold([]byte("fetch"), "FETCH") || EqualFold([]byte("fetc"), "FETCH") {
		t.Error("EqualFold")
	}
}
