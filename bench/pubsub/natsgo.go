package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// natsgoResult is what the nats.go program reports at the end.
type natsgoResult struct {
	Published, Expected, Received, Lost, Duplicates uint64
	ConnectS                                        float64
}

// natsgoMain is the plain nats.go client of the ipush2 part, run in its own
// process (`pubsub -natsgo ...`) so that its CPU is its own: subscribers,
// each on its own connection with one asynchronous subscription (a
// callback, the library's usual way), round robin over the subjects, then
// publishers, one per subject, at a fixed rate. Every message carries its
// sequence number, so each subscriber counts what it lost. It prints
// "ready", then "w0 DELIVERED UNIXNANO" 2 s into the publishing and
// "w1 DELIVERED UNIXNANO" 2 s before its end (the measuring window), then
// "result JSON".
func natsgoMain(args []string) {
	fl := flag.NewFlagSet("natsgo", flag.ExitOnError)
	url := fl.String("url", "", "server URL")
	subs := fl.Int("subs", 3000, "subscribers")
	pubs := fl.Int("pubs", 5, "publishers (= subjects)")
	rate := fl.Float64("rate", 35, "messages per second per publisher")
	size := fl.Int("size", 100, "payload bytes (at least 16)")
	dur := fl.Duration("dur", 60*time.Second, "publishing time")
	fl.Parse(args)
	raiseNoFile()
	t0 := time.Now()
	var delivered atomic.Uint64
	type sub struct {
		mu       sync.Mutex
		last     uint64
		got, dup uint64
		nc       *nats.Conn
		subject  int
	}
	ss := make([]*sub, *subs)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := &sub{subject: i % *pubs}
				nc, err := nats.Connect(*url, nats.Name("natsgo-"+strconv.Itoa(i)), nats.Timeout(10*time.Second))
				if err != nil {
					fmt.Fprintln(os.Stderr, "natsgo: connect:", err)
					os.Exit(1)
				}
				s.nc = nc
				_, err = nc.Subscribe("throng."+strconv.Itoa(s.subject), func(m *nats.Msg) {
					seq := binary.BigEndian.Uint64(m.Data)
					s.mu.Lock()
					if seq <= s.last {
						s.dup++
					} else {
						s.last = seq
						s.got++
					}
					s.mu.Unlock()
					delivered.Add(1)
				})
				if err == nil {
					err = nc.Flush()
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "natsgo: subscribe:", err)
					os.Exit(1)
				}
				ss[i] = s
			}
		}()
	}
	for i := 0; i < *subs; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	connectS := time.Since(t0).Seconds()
	fmt.Println("ready")
	// Publishers.
	var published atomic.Uint64
	sent := make([]uint64, *pubs)
	var pw sync.WaitGroup
	start := time.Now()
	end := start.Add(*dur)
	interval := time.Duration(float64(time.Second) / *rate)
	for p := 0; p < *pubs; p++ {
		nc, err := nats.Connect(*url, nats.Name("natsgo-pub-"+strconv.Itoa(p)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "natsgo: connect:", err)
			os.Exit(1)
		}
		pw.Add(1)
		go func() {
			defer pw.Done()
			defer nc.Close()
			subject := "throng." + strconv.Itoa(p)
			payload := make([]byte, max(*size, 16))
			var seq uint64
			for k := 0; ; k++ {
				at := start.Add(time.Duration(k) * interval)
				if !at.Before(end) {
					break
				}
				time.Sleep(time.Until(at))
				seq++
				binary.BigEndian.PutUint64(payload, seq)
				binary.BigEndian.PutUint64(payload[8:], uint64(time.Now().UnixNano()))
				if err := nc.Publish(subject, payload); err != nil {
					fmt.Fprintln(os.Stderr, "natsgo: publish:", err)
					break
				}
				published.Add(1)
			}
			nc.Flush()
			sent[p] = seq
		}()
	}
	time.Sleep(time.Until(start.Add(2 * time.Second)))
	fmt.Printf("w0 %d %d\n", delivered.Load(), time.Now().UnixNano())
	time.Sleep(time.Until(end.Add(-2 * time.Second)))
	fmt.Printf("w1 %d %d\n", delivered.Load(), time.Now().UnixNano())
	pw.Wait()
	var expected uint64
	for _, s := range ss {
		expected += sent[s.subject]
	}
	// Drain: wait (at most 30 s, 2 s without progress) for the backlog.
	deadline := time.Now().Add(30 * time.Second)
	last, lastAt := delivered.Load(), time.Now()
	for time.Now().Before(deadline) {
		d := delivered.Load()
		var got uint64
		for _, s := range ss {
			s.mu.Lock()
			got += s.got
			s.mu.Unlock()
		}
		if got >= expected {
			break
		}
		if d != last {
			last, lastAt = d, time.Now()
		} else if time.Since(lastAt) > 2*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := natsgoResult{Published: published.Load(), Expected: expected, ConnectS: connectS}
	for _, s := range ss {
		s.mu.Lock()
		r.Received += s.got
		r.Duplicates += s.dup
		s.mu.Unlock()
		s.nc.Close()
	}
	r.Lost = r.Expected - min(r.Expected, r.Received)
	b, _ := json.Marshal(r)
	fmt.Printf("result %s\n", b)
}
