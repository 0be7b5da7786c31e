package testenv

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// stubRequests finds the third number of stub_status's counters line
// ("accepts handled requests"): the requests served.
var stubRequests = regexp.MustCompile(`\n\s*\d+\s+\d+\s+(\d+)`)

// NginxRequests reads the requests an nginx started by StartNginx (base
// is its URL) has served, from its stub_status page (/nginx_status); the
// count includes this request. It gives up after 5 s.
func NginxRequests(base string) (int64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/nginx_status")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, err
	}
	m := stubRequests.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("testenv: no request count in nginx's stub_status %q", b)
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}
