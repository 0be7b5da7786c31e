package testenv

import (
	"io"
	"net/http"
	"testing"
)

// NginxRequests counts what nginx served: five GETs between two reads
// move it by six (the second read counts itself).
func TestNginxRequestsCounts(t *testing.T) {
	t.Parallel()
	s := Nginx(t, NginxOptions{})
	before, err := NginxRequests(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		resp, err := http.Get(s.URL + "/one.html")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	after, err := NginxRequests(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 6 {
		t.Fatalf("nginx counted %d requests for 5 GETs and one read of its status, want 6", after-before)
	}
}
