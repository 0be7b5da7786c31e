package pubsub

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// A NATS server closes a slow consumer's connection without a word to the
// client; only its monitoring endpoint says why it closed a connection.
// With pubsub.monitor set, a connection the server closed is looked up
// there by its id (INFO's client_id) among the closed connections.

// monitorClient is used for the lookups: no proxy, no keep-alive.
var monitorClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	Timeout:   2 * time.Second,
}

// closeReason returns why the NATS server closed connection cid ("Slow
// Consumer (Pending Bytes)", "Client Closed", ...), or "" when there is
// no monitor, no such connection, or no answer (a server that is down).
func (c *Config) closeReason(cid uint64) string {
	if c.Monitor == "" || cid == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	url := c.Monitor + "/connz?state=closed&cid=" + strconv.FormatUint(cid, 10)
	// The server records a closed connection a moment after closing it.
	for try := 0; try < 5; try++ {
		if why := lookupReason(ctx, url, cid); why != "" {
			return why
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(20 * time.Millisecond):
		}
	}
	return ""
}

func lookupReason(ctx context.Context, url string, cid uint64) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ""
	}
	resp, err := monitorClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var connz struct {
		Connections []struct {
			CID    uint64 `json:"cid"`
			Reason string `json:"reason"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&connz); err != nil {
		return ""
	}
	for _, cn := range connz.Connections {
		if cn.CID == cid {
			return cn.Reason
		}
	}
	return ""
}
