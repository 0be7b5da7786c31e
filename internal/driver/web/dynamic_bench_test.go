package web

import (
	"context"
	"runtime"
	"testing"

	"github.com/throng-io/throng/internal/driver"
)

// BenchmarkOpenDynamicUser: what a dynamic user costs before its first
// request (client, cookie jar, variables): B/op is the memory per user.
func BenchmarkOpenDynamicUser(b *testing.B) {
	c, _, _ := compileAll("http://127.0.0.1:9", "users: 1\nclosed: {iterations: 1}\nweb: {cookies: true}\nactions: [{path: /}]\n")
	b.ReportAllocs()
	keep := make([]driver.Session, 0, b.N)
	for i := 0; b.Loop(); i++ {
		s, _ := c.Open(context.Background(), driver.User{ID: i, Users: 1 << 20, Seed: uint64(i)})
		keep = append(keep, s)
	}
	runtime.KeepAlive(keep)
}

// BenchmarkDynamicStep: one step of a dynamic user against the embedded
// server (in this process: its cost is in the figures), a JSON body
// extracted from and checked.
func BenchmarkDynamicStep(b *testing.B) {
	url := embedded(b)
	c, acts, errs := compileAll(url, `
users: 1
closed: {iterations: 1}
actions:
  - name: products
    path: /shop/products
    extract: {first: {json: '$.products[0].name'}}
    checks: [{name: fifty, json: '$.products[49].id', equals: "50"}]
`)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	s, _ := c.Open(context.Background(), driver.User{Users: 1})
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Do(context.Background(), acts["products"]); err != nil {
			b.Fatal(err)
		}
	}
}
