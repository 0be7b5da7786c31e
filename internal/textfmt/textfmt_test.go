package textfmt

import (
	"bytes"
	"math"
	"testing"
)

func TestFormats(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Num(1234567), "1,234,567"}, {Num(-4200), "-4,200"}, {Num(12.345), "12.3"}, {Num(0.5), "0.500"}, {Num(math.NaN()), "–"},
		{Sig(0.00123), "0.00123"}, {Sig(12.34), "12.3"}, {Sig(123.4), "123"}, {Sig(98765), "98,765"}, {Sig(0), "0"},
		{Ms(0.1234), "0.123 ms"}, {Ms(12.34), "12.3 ms"}, {Ms(123.4), "123 ms"}, {Ms(2500), "2.50 s"},
		{Secs(9.5), "9.50 s"}, {Secs(125), "2m05s"}, {Pct(0.0123), "1.23%"}, {BytesRate(2.5e6), "2.50 MB/s"}, {BytesRate(500), "500 B/s"},
		{MarkdownEscape("a|b*c_d<e>`f\ng"), "a\\|b\\*c\\_d&lt;e>\\`f g"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestTable(t *testing.T) {
	tb := &Table{Left: func(_ int, h string) bool { return h == "verdict" }}
	tb.Add("measure", "A", "verdict")
	tb.Add("rate", "1,000", "better")
	tb.Add("p99 latency", "12.3 ms", "~")
	var b bytes.Buffer
	tb.Write(&b)
	want := "measure            A  verdict\nrate           1,000  better\np99 latency  12.3 ms  ~\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	tb.Markdown(&b)
	want = "| measure | A | verdict |\n|:---|---:|:---|\n| rate | 1,000 | better |\n| p99 latency | 12.3 ms | ~ |\n"
	if b.String() != want {
		t.Errorf("markdown:\n%q\nwant\n%q", b.String(), want)
	}
}
