package report

import (
	"os"
	"testing"

	"github.com/throng-io/throng/internal/result"
)

func TestDevPages(t *testing.T) {
	dir := os.Getenv("DEV_PAGES")
	if dir == "" {
		t.Skip()
	}
	write(t, dir+"/one.html", []byte(page(t, fakeRun(1))))
	write(t, dir+"/two.html", []byte(page(t, synthRun("A", 7200, 1), synthRun("B", 7000, 0.7))))
	a, b, c := fakeRun(5), fakeRun(5), fakeRun(5)
	a.Meta.Label, b.Meta.Label, c.Meta.Label = "A", "B", "C"
	write(t, dir+"/three.html", []byte(page(t, []*result.Run{a, b, c}...)))
}
