package netloop

import (
	"golang.org/x/net/http2"

	"github.com/throng-io/throng/internal/driver"
)

// This file reads a connection's frames (HTTP/2, h2.go): a 9-byte header,
// then the payload, DATA counted and skipped as it comes, the other frames
// gathered and handled whole.

// h2Received feeds bytes from s's connection through the framing.
func (l *loop) h2Received(lead *conn, b []byte) {
	s := l.sessOf(lead)
	gen := lead.gen
	for len(b) > 0 && lead.gen == gen && lead.fd >= 0 {
		if !s.inFrame {
			k := copy(s.hdr[s.hn:], b)
			s.hn += k
			b = b[k:]
			if s.hn == h2HeaderLen {
				s.hn = 0
				l.h2Header(s)
			}
			continue
		}
		k := min(s.need, len(b))
		if s.fType != http2.FrameData {
			s.pay = append(s.pay, b[:k]...)
		}
		s.need -= k
		b = b[k:]
		if s.need == 0 {
			l.h2Payload(s)
		}
	}
}

// h2Header reads a frame header; a frame without payload is handled at once.
func (l *loop) h2Header(s *h2sess) {
	h := &s.hdr
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	s.fType, s.fFlags = http2.FrameType(h[3]), http2.Flags(h[4])
	s.fStream = be32(h[5:]) & (1<<31 - 1)
	switch {
	case n > h2MaxFrame:
		l.h2Fail(s, errH2Frame)
		return
	case s.cont != (s.fType == http2.FrameContinuation), s.cont && s.fStream != s.block:
		l.h2Fail(s, errH2Protocol) // a header block is not interrupted (RFC 9113 §6.10)
		return
	}
	s.fLen, s.need, s.inFrame = n, n, true
	s.pay = s.pay[:0]
	if s.fType == http2.FrameData {
		if l.h2DataStart(s); l.conns[s.leader].fd < 0 {
			return // failed
		}
	}
	if n == 0 {
		l.h2Payload(s)
	}
}

// h2DataStart accounts for a DATA frame before its payload: the bytes are
// given back to the connection's window and the stream's as they come.
func (l *loop) h2DataStart(s *h2sess) {
	if s.fStream == 0 {
		l.h2Fail(s, errH2Protocol)
		return
	}
	n := s.fLen
	s.unacked += n
	if s.unacked >= h2ConnWindow/2 {
		s.wbuf = h2WindowUpdate(s.wbuf, 0, s.unacked)
		s.unacked = 0
		l.h2Dirty(s)
	}
	c := l.h2Member(s, s.fStream)
	if c == nil {
		return
	}
	c.bytesIn += int64(h2HeaderLen + n)
	if s.fFlags&http2.FlagDataEndStream == 0 {
		c.unacked += int32(n)
		if c.unacked >= h2Window/2 {
			s.wbuf = h2WindowUpdate(s.wbuf, c.stream, int(c.unacked))
			c.unacked = 0
			l.h2Dirty(s)
		}
	}
}

// h2Payload handles a frame whose payload is all there (DATA: skipped).
func (l *loop) h2Payload(s *h2sess) {
	s.inFrame = false
	p := s.pay
	switch s.fType {
	case http2.FrameData:
		if s.fFlags&http2.FlagDataEndStream != 0 {
			if c := l.h2Member(s, s.fStream); c != nil {
				l.h2End(s, c)
			}
		}
	case http2.FrameHeaders:
		if s.fStream == 0 {
			l.h2Fail(s, errH2Protocol)
			return
		}
		if s.fFlags&http2.FlagHeadersPadded != 0 {
			if len(p) < 1 || int(p[0]) > len(p)-1 {
				l.h2Fail(s, errH2Protocol)
				return
			}
			p = p[1 : len(p)-int(p[0])]
		}
		if s.fFlags&http2.FlagHeadersPriority != 0 {
			if len(p) < 5 {
				l.h2Fail(s, errH2Protocol)
				return
			}
			p = p[5:]
		}
		s.block, s.endStream, s.status = s.fStream, s.fFlags&http2.FlagHeadersEndStream != 0, 0
		s.dec.SetEmitEnabled(true)
		l.h2Block(s, p, s.fFlags&http2.FlagHeadersEndHeaders != 0)
	case http2.FrameContinuation:
		l.h2Block(s, p, s.fFlags&http2.FlagContinuationEndHeaders != 0)
	case http2.FrameRSTStream:
		if len(p) != 4 || s.fStream == 0 {
			l.h2Fail(s, errH2Protocol)
			return
		}
		c := l.h2Member(s, s.fStream)
		if c == nil {
			return
		}
		l.h2Unmap(s, c)
		if code := be32(p); code == uint32(http2.ErrCodeRefusedStream) {
			l.h2Retry(s, c, errH2Refused)
		} else {
			l.finish(c, driver.IO, h2ResetErr(code))
		}
		l.h2Pump(s)
	case http2.FrameSettings:
		l.h2Settings(s, p)
	case http2.FramePing:
		if len(p) != 8 || s.fStream != 0 {
			l.h2Fail(s, errH2Protocol)
			return
		}
		if s.fFlags&http2.FlagPingAck == 0 {
			s.wbuf = h2Frame(s.wbuf, 8, http2.FramePing, http2.FlagPingAck, 0)
			s.wbuf = append(s.wbuf, p...)
			l.h2Dirty(s)
		}
	case http2.FrameGoAway:
		if len(p) < 8 || s.fStream != 0 {
			l.h2Fail(s, errH2Protocol)
			return
		}
		l.h2GoAway(s, be32(p)&(1<<31-1))
	case http2.FrameWindowUpdate:
		if len(p) != 4 {
			l.h2Fail(s, errH2Protocol)
		}
		// We send no DATA: the server's windows do not matter.
	case http2.FramePushPromise:
		l.h2Fail(s, errH2Push)
	}
	// PRIORITY and unknown frames are ignored (RFC 9113 §4.1, §5.5).
}

// h2Block decodes a header block fragment; at its end, the response's
// status is known, and an END_STREAM on its HEADERS completes it.
func (l *loop) h2Block(s *h2sess, frag []byte, end bool) {
	if _, err := s.dec.Write(frag); err != nil {
		l.h2Fail(s, errH2HPACK)
		return
	}
	c := l.h2Member(s, s.block)
	if c != nil {
		c.bytesIn += int64(h2HeaderLen + s.fLen)
	}
	s.cont = !end
	if !end {
		return
	}
	if err := s.dec.Close(); err != nil {
		l.h2Fail(s, errH2HPACK)
		return
	}
	if c == nil {
		return
	}
	if c.h2status < 200 {
		// The response's first block, or the final one after interim
		// (1xx) responses; a later block is trailers.
		c.h2status = int16(s.status)
		if s.status >= 100 && s.status < 200 && !s.endStream {
			c.h2status = 0
		}
	}
	if s.endStream {
		l.h2End(s, c)
	}
}

// h2Settings applies the server's SETTINGS and acknowledges them.
func (l *loop) h2Settings(s *h2sess, p []byte) {
	if s.fStream != 0 || len(p)%6 != 0 || (s.fFlags&http2.FlagSettingsAck != 0 && len(p) > 0) {
		l.h2Fail(s, errH2Protocol)
		return
	}
	if s.fFlags&http2.FlagSettingsAck != 0 {
		return
	}
	if !s.settings {
		s.maxStreams = 1<<32 - 1 // none said: no limit
	}
	for ; len(p) > 0; p = p[6:] {
		id, v := http2.SettingID(uint16(p[0])<<8|uint16(p[1])), be32(p[2:])
		switch id {
		case http2.SettingMaxConcurrentStreams:
			s.maxStreams = v
		case http2.SettingInitialWindowSize:
			if v > 1<<31-1 {
				l.h2Fail(s, errH2Protocol)
				return
			}
		case http2.SettingMaxFrameSize:
			if v < 1<<14 || v > 1<<24-1 {
				l.h2Fail(s, errH2Protocol)
				return
			}
		}
	}
	s.settings = true
	s.wbuf = h2Frame(s.wbuf, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
	l.h2Dirty(s)
	l.h2Pump(s)
}

// h2GoAway stops new streams on s: those above last were not processed
// and go again on a new connection (once, when idempotent); the others
// finish, then the connection closes (h2Pump).
func (l *loop) h2GoAway(s *h2sess, last uint32) {
	s.goaway = true
	for _, m := range s.ids {
		if m < 0 || l.conns[m].stream <= last {
			continue
		}
		c := &l.conns[m]
		l.h2Unmap(s, c)
		l.h2Retry(s, c, errH2GoAway)
	}
	l.h2Pump(s)
}
