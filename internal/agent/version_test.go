package agent

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/runner"
)

// oldPeer speaks the greeting of the agent protocol's version 2 and
// returns what the other side sent first.
func oldPeer(t *testing.T, c net.Conn) string {
	t.Helper()
	nonce := make([]byte, nonceSize)
	rand.Read(nonce)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write(append([]byte("throng-agent/2\n"), nonce...))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// A controller and an agent of different versions refuse each other
// before anything else, and say why: the wire changed with version 3
// (several plans per session, a data set prepared once), as with 2
// (settings by key path, never flags).
func TestOtherProtocolVersionRefused(t *testing.T) {
	const want = "the peer speaks throng-agent/2 and this side throng-agent/3, another version of the agent protocol: run the same release of throng on the controller and on every agent"
	t.Run("old agent", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		heard := make(chan string, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			heard <- oldPeer(t, c)
			io.Copy(io.Discard, c)
		}()
		c := &Controller{Agents: []string{ln.Addr().String()}, Token: token, Insecure: true, Plan: PlanRequest{Source: "x"}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = c.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("controller: %v\nwant %q", err, want)
		}
		if got := <-heard; got != protocol+"\n" {
			t.Errorf("the controller greeted with %q", got)
		}
	})
	t.Run("old controller", func(t *testing.T) {
		r := &fakeRunner{intervals: 2}
		log := &syncBuffer{}
		addr := startServer(t, &Server{Token: token, Runner: r, Log: log})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := oldPeer(t, c); got != protocol+"\n" {
			t.Errorf("the agent greeted with %q", got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(log.String(), want) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(log.String(), "refused 127.0.0.1") || !strings.Contains(log.String(), want) || r.running.Load() != 0 {
			t.Errorf("agent log %q, running %d", log.String(), r.running.Load())
		}
	})
}

// A plan request carries settings by key and value only: where a value
// came from (a flag's name, for messages) stays on the controller's side.
func TestPlanRequestCarriesKeyPaths(t *testing.T) {
	req := PlanRequest{File: "a.yaml", Source: "users: 1\n", Segment: "1/2",
		Settings: []runner.Setting{{Key: "users", Value: "20", From: "flag --users"}, {Key: "vars.size", Value: "8KB", From: "flag --set"}}}
	b, err := json.Marshal(&Message{Kind: KindPlan, Plan: &req})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "--") || strings.Contains(string(b), "flag") {
		t.Errorf("the wire carries a flag: %s", b)
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if got := m.Plan.Settings; len(got) != 2 || got[0] != (runner.Setting{Key: "users", Value: "20"}) || got[1] != (runner.Setting{Key: "vars.size", Value: "8KB"}) {
		t.Errorf("settings %+v", got)
	}
}
