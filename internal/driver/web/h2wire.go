package web

import (
	"bytes"
	"sort"
	"strings"

	"golang.org/x/net/http2/hpack"

	"github.com/throng-io/throng/internal/driver"
)

// This file is the static storm over HTTP/2 without TLS (h2c): each
// request's header block is HPACK-encoded once, before the run, and the
// engine's event loops send it as is in a HEADERS frame on any connection.

// maxH2Block is the largest header block sent in one HEADERS frame: the
// smallest SETTINGS_MAX_FRAME_SIZE a server may have (RFC 9113 §4.2).
const maxH2Block = 16384

// h2Hop are the connection-specific fields HTTP/2 forbids (RFC 9113
// §8.2.2); Host becomes :authority.
var h2Hop = map[string]bool{"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true, "upgrade": true, "host": true, "content-length": true}

// encodeH2 returns the header block of a request without a body, encoded
// so that it never refers to nor enters the HPACK dynamic table: a field of
// the static table, name and value, is its index; any other is a literal
// without indexing (RFC 7541 §6.2.2), with the static table's index of its
// name when it has one. The same bytes then decode to the same fields
// whatever the decoder's dynamic table holds, and leave it as it was, so
// one encoding serves every connection, every time (a block with literals
// "with incremental indexing", or one referring to entries a first request
// added, would not). nil when the block exceeds maxH2Block.
//
// fields are the pseudo-header fields, then the others, lower-case.
func encodeH2(fields []hpack.HeaderField) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	// An encoder whose dynamic table holds nothing never indexes. Its first
	// block would begin with the table size update (to 0) that says so: a
	// dummy block takes it, so the real one has none and changes nothing
	// in the server's decoder.
	enc.SetMaxDynamicTableSizeLimit(0)
	enc.SetMaxDynamicTableSize(0)
	enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
	buf.Reset()
	for _, f := range fields {
		enc.WriteField(f)
	}
	if buf.Len() > maxH2Block {
		return nil
	}
	return bytes.Clone(buf.Bytes())
}

// h2Fields are the fields of a static request in HTTP/2: the pseudo-header
// fields (RFC 9113 §8.3.1) from the method, the target and the path, then
// User-Agent and the headers (canonical names, expanded values) sorted, in
// lower case, without the connection-specific ones.
func (c *Config) h2Fields(method, path string, headers map[string]string) []hpack.HeaderField {
	if base := strings.TrimSuffix(c.target.EscapedPath(), "/"); base != "" {
		path = base + path
	}
	host, ua := c.host, "throng/"+c.productVersion()
	if c.UserAgent != "" {
		ua = c.UserAgent
	}
	if v, ok := headers["Host"]; ok {
		host = v
	}
	if v, ok := headers["User-Agent"]; ok {
		ua = v
	}
	fields := []hpack.HeaderField{
		{Name: ":method", Value: method},
		{Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: host},
		{Name: ":path", Value: path},
		{Name: "user-agent", Value: ua},
	}
	keys := make([]string, 0, len(headers))
	for k := range headers {
		if lk := strings.ToLower(k); !h2Hop[lk] && lk != "user-agent" && lk != "te" {
			keys = append(keys, lk)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fields = append(fields, hpack.HeaderField{Name: k, Value: headers[canonical(k)]})
	}
	return fields
}

// wireH2 reports whether the event loops may run this configuration's
// requests as HTTP/2: h2c, a static run, connections kept.
func (c *Config) wireH2() bool {
	return c.Protocol == H2C && !c.dyn.on && c.KeepAlive && !c.tls
}

// WireH2 implements driver.WireH2.
func (c *Config) WireH2() (int, bool) {
	if !c.wireH2() {
		return 0, false
	}
	return c.Streams, true
}

// WireH2Headers implements driver.WireH2Action.
func (a *action) WireH2Headers() []byte { return a.h2 }

var (
	_ driver.WireH2       = (*Config)(nil)
	_ driver.WireH2Action = (*action)(nil)
)
