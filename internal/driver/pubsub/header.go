package pubsub

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
)

// Every message a publisher sends starts with a fixed header that makes loss
// and latency exact: which run it belongs to, which stream (its publisher
// and its subject), its sequence number in that stream, and when it was
// sent. A stream is one publisher on one subject, so every subscriber of the
// subject sees each stream's numbers 1, 2, 3, ... The publisher is the
// user's global ID, the same in every segment of a distributed run, so a
// stream is named the same wherever its messages are read. The rest of the
// payload is filler up to the message size.
//
//	offset  size  field
//	0       4     magic "thr2"
//	4       4     run tag (little endian): the run and repetition (runTag)
//	8       4     publisher: the publishing user's global ID
//	12      4     subject's number
//	16      8     sequence number in the stream, from 1
//	24      8     send time, Unix nanoseconds (wall clock, so that
//	              publishers and subscribers in different processes agree)
const HeaderSize = 32

// magic opens every header; a payload without it did not come from throng.
var magic = [4]byte{'t', 'h', 'r', '2'}

// header is a decoded message header.
type header struct {
	run     uint32
	pub     uint32
	subject uint32
	seq     uint64
	sent    int64
}

// key is the header's stream.
func (h header) key() streamKey { return streamKey(uint64(h.pub)<<32 | uint64(h.subject)) }

// streamKey names a stream in every process of a run: its publisher's
// global user ID (high 32 bits) and its subject's number (low 32 bits).
type streamKey uint64

func keyOf(user int, subject int32) streamKey {
	return streamKey(uint64(uint32(user))<<32 | uint64(uint32(subject)))
}

func (k streamKey) user() int      { return int(uint32(k >> 32)) }
func (k streamKey) subject() int32 { return int32(uint32(k)) }

// runTag is the header's tag of repetition rep of run id: the same in every
// segment of the run, different from another run's (but for a 2^-32
// chance), so that a message of another run on the same subjects is told
// apart.
func runTag(id string, rep int) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	h.Write([]byte{'/'})
	h.Write(strconv.AppendInt(nil, int64(rep), 10))
	return h.Sum32()
}

// putHeader writes h at the start of p, which holds at least HeaderSize
// bytes.
func putHeader(p []byte, h header) {
	_ = p[HeaderSize-1]
	copy(p[:4], magic[:])
	binary.LittleEndian.PutUint32(p[4:], h.run)
	binary.LittleEndian.PutUint32(p[8:], h.pub)
	binary.LittleEndian.PutUint32(p[12:], h.subject)
	binary.LittleEndian.PutUint64(p[16:], h.seq)
	binary.LittleEndian.PutUint64(p[24:], uint64(h.sent))
}

// putSeqTime patches the sequence number and the send time of a header
// already written by putHeader: the only bytes that change per message.
func putSeqTime(p []byte, seq uint64, sent int64) {
	_ = p[HeaderSize-1]
	binary.LittleEndian.PutUint64(p[16:], seq)
	binary.LittleEndian.PutUint64(p[24:], uint64(sent))
}

// parseHeader decodes the header at the start of a payload. ok is false
// when the payload is too short or does not start with the magic.
func parseHeader(p []byte) (h header, ok bool) {
	if len(p) < HeaderSize || p[0] != magic[0] || p[1] != magic[1] || p[2] != magic[2] || p[3] != magic[3] {
		return header{}, false
	}
	return header{
		run:     binary.LittleEndian.Uint32(p[4:]),
		pub:     binary.LittleEndian.Uint32(p[8:]),
		subject: binary.LittleEndian.Uint32(p[12:]),
		seq:     binary.LittleEndian.Uint64(p[16:]),
		sent:    int64(binary.LittleEndian.Uint64(p[24:])),
	}, true
}

// fillPayload returns a payload of size bytes: a header for stream key of
// run tag (sequence and time zero, patched per message) and printable
// filler.
func fillPayload(size int, run uint32, key streamKey) []byte {
	const pattern = "throng pub/sub payload 0123456789 abcdefghijklmnopqrstuvwxyz\n"
	p := make([]byte, size)
	for i := HeaderSize; i < size; i++ {
		p[i] = pattern[i%len(pattern)]
	}
	putHeader(p, header{run: run, pub: uint32(key.user()), subject: uint32(key.subject())})
	return p
}
