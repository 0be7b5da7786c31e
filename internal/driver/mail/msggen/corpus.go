package msggen

import (
	"bytes"
	"encoding/base64"
	"sort"
	"sync"
)

// Message content is copied out of corpora built once per process rather
// than drawn word by word: a 25 KB message is a few copies (about 2 µs)
// instead of 4,000 draws (about 165 µs, two fifths of the generator's CPU
// per message sent in bench/mail's SMTP run). A message's text is a window
// of whole lines of a 1 MB text corpus starting at a line its seed picks,
// so its words follow the corpus's law (Zipf, see generateText) and two
// messages rarely share more than a fraction of their text; attachments
// are windows of pre-encoded base64 lines. Content longer than a corpus
// repeats it (a 10 MB attachment is 8 copies of the binary corpus: a
// compressor with a window over 1 MB would notice).
const (
	textCorpusSize = 1 << 20
	b64Lines       = 16_384 // base64 lines per attachment corpus (78 bytes each: 1.2 MB)
	b64Raw         = 57     // raw bytes per base64 line
	b64Line        = 78     // 76 characters and CRLF
)

type corpora struct {
	text   []byte
	starts []int  // where every line of text starts, and len(text) last
	binary []byte // b64Lines lines encoding pseudo-random bytes
	csv    []byte // b64Lines lines encoding text
}

var (
	corpusOnce sync.Once
	corpusData corpora
)

// corpus builds the corpora on first use (about 10 ms) and returns them.
func corpus() *corpora {
	corpusOnce.Do(func() {
		c := &corpusData
		c.text = generateText(make([]byte, 0, textCorpusSize), NewRNG(0x636f72707573), textCorpusSize)
		// Less generateText's last line, padded with dots to the length.
		c.text = c.text[:bytes.LastIndexByte(c.text[:len(c.text)-2], '\n')+1]
		c.starts = append(c.starts, 0)
		for i, ch := range c.text {
			if ch == '\n' {
				c.starts = append(c.starts, i+1)
			}
		}
		r := NewRNG(0x6236342d62696e)
		var raw [b64Raw]byte
		c.binary = make([]byte, 0, b64Lines*b64Line)
		c.csv = make([]byte, 0, b64Lines*b64Line)
		for i := range b64Lines {
			for j := 0; j < b64Raw; j += 8 {
				v := r.Next()
				for k := j; k < j+8 && k < b64Raw; k++ {
					raw[k] = byte(v)
					v >>= 8
				}
			}
			c.binary = appendB64Line(c.binary, raw[:])
			off := i * b64Raw % (len(c.text) - b64Raw)
			c.csv = appendB64Line(c.csv, c.text[off:off+b64Raw])
		}
	})
	return &corpusData
}

func appendB64Line(b, raw []byte) []byte {
	at := len(b)
	b = grow(b, base64.StdEncoding.EncodedLen(len(raw)))
	base64.StdEncoding.Encode(b[at:], raw)
	return append(b, '\r', '\n')
}

// appendText appends exactly n bytes of text: whole lines (at most 78
// characters and CRLF) of the text corpus from a line r picks, the last
// one cut to fit and ending in CRLF. n below 3 gives filler.
func appendText(b []byte, r *RNG, n int) []byte {
	if n < 3 {
		for range n {
			b = append(b, '.')
		}
		return b
	}
	c := corpus()
	lines := len(c.starts) - 1
	i := r.Intn(lines)
	left := n
	for {
		// The whole lines from i that fit, in one copy.
		from := c.starts[i]
		j := sort.Search(lines+1-i, func(k int) bool { return c.starts[i+k]-from > left }) + i - 1
		if j > i {
			b = append(b, c.text[from:c.starts[j]]...)
			left -= c.starts[j] - from
		}
		if j < lines {
			i = j
			break
		}
		i = 0 // wrapped: go on from the corpus's start
	}
	switch line := c.text[c.starts[i]:c.starts[i+1]]; {
	case left >= 2:
		// The next line cut to fit (it is longer than what is left).
		cut := line[:left-2]
		b = append(b, cut...)
		if len(cut) > 0 && cut[len(cut)-1] == ' ' {
			b[len(b)-1] = '.'
		}
		b = append(b, '\r', '\n')
	case left == 1:
		// n >= 3, so a line ending in CRLF was copied: end it with a dot.
		b = append(b[:len(b)-2], '.', '\r', '\n')
	}
	return b
}

// appendAttachment appends raw bytes of content, base64-encoded in lines
// of 76 characters and CRLF: pseudo-random bytes (incompressible, like a
// PDF or an image) or text (compressible, like a CSV report).
func appendAttachment(b []byte, r *RNG, raw int, binary bool) []byte {
	c := corpus()
	src := c.csv
	if binary {
		src = c.binary
	}
	full := raw / b64Raw
	at := r.Intn(b64Lines) * b64Line
	for left := full * b64Line; left > 0; {
		k := min(left, len(src)-at)
		b = append(b, src[at:at+k]...)
		left -= k
		at = 0
	}
	if rest := raw % b64Raw; rest > 0 {
		var chunk [b64Raw]byte
		if binary {
			for i := range rest {
				chunk[i] = byte(r.Next())
			}
		} else {
			off := r.Intn(len(c.text) - rest)
			copy(chunk[:], c.text[off:off+rest])
		}
		b = appendB64Line(b, chunk[:rest])
	}
	return b
}
