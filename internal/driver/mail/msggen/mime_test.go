package msggen

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"time"
)

func gen(seed uint64, size int) ([]byte, int) {
	sp := Spec{Seed: seed, Size: size, From: "user0001@example.test", To: []string{"user0002@example.test"},
		Date: PopDate, Mark: "abc.1"}
	return Build(nil, &sp)
}

// Generated messages have exactly the asked size, are valid MIME (parsed
// by the standard library, attachments decoded), have CRLF lines of at
// most 998 bytes, name their codename, and are the same for the same seed.
func TestMessagesAreExactValidMIME(t *testing.T) {
	for _, size := range []int{1000, 5000, 11_999, 12_000, 25_000, 75_000, 250_000, 1_000_000} {
		for seed := uint64(1); seed <= 5; seed++ {
			m, tag := gen(seed*7919+uint64(size), size)
			if len(m) != size {
				t.Fatalf("size %d seed %d: %d bytes", size, seed, len(m))
			}
			again, _ := gen(seed*7919+uint64(size), size)
			if !bytes.Equal(m, again) {
				t.Fatalf("size %d: not deterministic", size)
			}
			for i, line := range bytes.Split(m, []byte("\r\n")) {
				if len(line) > 998 || bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 {
					t.Fatalf("size %d: line %d: %d bytes, bare CR or LF", size, i, len(line))
				}
			}
			msg, err := mail.ReadMessage(bytes.NewReader(m))
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if msg.Header.Get(TagHeader) != Codenames[tag] || msg.Header.Get(MarkHeader) != "abc.1" ||
				msg.Header.Get("Message-Id") == "" || msg.Header.Get("Subject") == "" {
				t.Fatalf("size %d: headers %v", size, msg.Header)
			}
			if _, err := msg.Header.Date(); err != nil {
				t.Fatalf("Date: %v", err)
			}
			mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(msg.Body)
			switch mt {
			case "text/plain":
				if size >= 13_000 {
					t.Errorf("size %d: no attachment", size)
				}
				if !bytes.Contains(body, []byte(Codenames[tag])) {
					t.Errorf("body lacks the codename")
				}
			case "multipart/mixed":
				mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
				parts := 0
				for {
					p, err := mr.NextPart()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("size %d: part: %v", size, err)
					}
					data, _ := io.ReadAll(p)
					if p.Header.Get("Content-Transfer-Encoding") == "base64" {
						if _, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(data), "\r\n", "")); err != nil {
							t.Fatalf("size %d: attachment: %v", size, err)
						}
					}
					parts++
				}
				if parts != 2 {
					t.Errorf("size %d: %d parts", size, parts)
				}
			default:
				t.Errorf("content type %s", mt)
			}
		}
	}
}

// The realistic distribution has the asked mean, many small messages and
// a long tail; fixed is exact.
func TestMessageSizes(t *testing.T) {
	r := NewRNG(1)
	for _, mean := range []int{25_000, 75_000} {
		var sum float64
		small, big := 0, 0
		const n = 40_000
		for range n {
			s := Size(r, mean, true)
			sum += float64(s)
			if s < mean/4 {
				small++
			}
			if s > 4*mean {
				big++
			}
		}
		got := sum / n
		if math.Abs(got-float64(mean))/float64(mean) > 0.06 {
			t.Errorf("mean %d: got %.0f", mean, got)
		}
		if small < n/2 || big == 0 {
			t.Errorf("mean %d: %d small, %d above 4x the mean", mean, small, big)
		}
	}
	if Size(r, 25_000, false) != 25_000 {
		t.Error("fixed")
	}
}

// Generated mail compresses as real mail does: text very well, the
// binary attachments not at all, the mixture in between; and its words
// follow a long-tailed law (thousands of distinct words).
func TestContentIsVaried(t *testing.T) {
	var all bytes.Buffer
	for j := range 200 {
		r := NewRNG(uint64(j))
		m, _ := gen(uint64(j), Size(r, 75_000, true))
		all.Write(m)
	}
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.DefaultCompression)
	w.Write(all.Bytes())
	w.Close()
	ratio := float64(z.Len()) / float64(all.Len())
	if ratio < 0.35 || ratio > 0.95 {
		t.Errorf("compression ratio %.2f", ratio)
	}
	words := map[string]int{}
	for _, w := range strings.Fields(string(appendText(nil, NewRNG(3), 500_000))) {
		words[strings.ToLower(strings.Trim(w, "."))]++
	}
	if len(words) < 3000 || words["the"] < 100*words[vocab[5000]] {
		t.Errorf("%d distinct words; 'the' %d times, rank 5000 %d times", len(words), words["the"], words[vocab[5000]])
	}
}

// Texts are windows of a corpus: different seeds give different windows,
// and a text longer than the corpus still has the asked length and lines.
func TestTextWindowsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for seed := range 200 {
		seen[string(appendText(nil, NewRNG(uint64(seed)), 2000))] = true
	}
	if len(seen) < 195 {
		t.Errorf("200 seeds gave %d different texts", len(seen))
	}
	long := appendText(nil, NewRNG(9), 3*textCorpusSize+77)
	if len(long) != 3*textCorpusSize+77 {
		t.Fatalf("%d bytes", len(long))
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(long, []byte("\r\n")), []byte("\r\n")) {
		if len(line) > 78 || bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("line %d: %q", i, line)
		}
	}
}

func TestAppendTextExact(t *testing.T) {
	for n := range 400 {
		b := appendText([]byte("x"), NewRNG(uint64(n)), n)
		if len(b) != n+1 {
			t.Fatalf("n %d: %d bytes", n, len(b)-1)
		}
		if n >= 3 && !bytes.HasSuffix(b, []byte("\r\n")) {
			t.Fatalf("n %d: %q does not end a line", n, b[max(0, len(b)-10):])
		}
	}
}

func BenchmarkGenerate75KB(b *testing.B) {
	buf := make([]byte, 0, 200_000)
	sp := Spec{Size: 75_000, From: "a@example.test", To: []string{"b@example.test"}, Date: time.Now()}
	b.SetBytes(75_000)
	for i := 0; b.Loop(); i++ {
		sp.Seed = uint64(i)
		buf, _ = Build(buf[:0], &sp)
	}
}
