package pubsub

import "encoding/binary"

// Every message a publisher sends starts with a fixed header that makes loss
// and latency exact: which stream it belongs to, its sequence number in that
// stream, and when it was sent. A stream is one publisher on one subject, so
// every subscriber of the subject sees each stream's numbers 1, 2, 3, ...
// The rest of the payload is filler up to the message size.
//
//	offset  size  field
//	0       4     magic "thr1"
//	4       4     stream id (little endian), unique within the run
//	8       8     sequence number in the stream, from 1
//	16      8     send time, Unix nanoseconds (wall clock, so that
//	              publishers and subscribers in different processes of one
//	              machine agree)
const HeaderSize = 24

// magic opens every header; a payload without it did not come from throng.
var magic = [4]byte{'t', 'h', 'r', '1'}

// header is a decoded message header.
type header struct {
	stream uint32
	seq    uint64
	sent   int64
}

// putHeader writes h at the start of p, which holds at least HeaderSize
// bytes.
func putHeader(p []byte, h header) {
	_ = p[HeaderSize-1]
	copy(p[:4], magic[:])
	binary.LittleEndian.PutUint32(p[4:], h.stream)
	binary.LittleEndian.PutUint64(p[8:], h.seq)
	binary.LittleEndian.PutUint64(p[16:], uint64(h.sent))
}

// putSeqTime patches the sequence number and the send time of a header
// already written by putHeader: the only bytes that change per message.
func putSeqTime(p []byte, seq uint64, sent int64) {
	_ = p[HeaderSize-1]
	binary.LittleEndian.PutUint64(p[8:], seq)
	binary.LittleEndian.PutUint64(p[16:], uint64(sent))
}

// parseHeader decodes the header at the start of a payload. ok is false
// when the payload is too short or does not start with the magic.
func parseHeader(p []byte) (h header, ok bool) {
	if len(p) < HeaderSize || p[0] != magic[0] || p[1] != magic[1] || p[2] != magic[2] || p[3] != magic[3] {
		return header{}, false
	}
	return header{
		stream: binary.LittleEndian.Uint32(p[4:]),
		seq:    binary.LittleEndian.Uint64(p[8:]),
		sent:   int64(binary.LittleEndian.Uint64(p[16:])),
	}, true
}

// fillPayload returns a payload of size bytes: a header for stream (sequence
// and time zero, patched per message) and printable filler.
func fillPayload(size int, stream uint32) []byte {
	const pattern = "throng pub/sub payload 0123456789 abcdefghijklmnopqrstuvwxyz\n"
	p := make([]byte, size)
	for i := HeaderSize; i < size; i++ {
		p[i] = pattern[i%len(pattern)]
	}
	putHeader(p, header{stream: stream})
	return p
}
