package netloop

import (
	"time"
	"unsafe"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine/workload"
)

// User states.
const (
	userWaiting uint8 = iota // not logged on yet (closed model: before its start)
	userActive
	userDone
)

// conn is one simulated user (closed model) or one session (open model)
// and its connection: a loop thread owns an array of them, preallocated,
// and refers to them by index. Only the owning thread touches a conn.
type conn struct {
	idx int32
	fd  int32  // -1: no socket
	gen uint32 // bumped at every close: events of an older socket are stale

	// The exchange in progress.
	busy       bool // an action is in progress
	connecting bool // waiting for the connect to finish
	reused     bool // the socket has carried a request already
	reusedNow  bool // this exchange was sent on a reused socket
	retried    bool // this exchange was retried on a fresh connection
	action     int32
	sched      time.Duration // scheduled start: latency is measured from here
	start      time.Duration // actual start: service time is measured from here
	deadline   time.Duration
	bytesIn    int64
	bytesOut   int64
	parser     driver.WireParser

	// Deadline list: busy conns in order of deadline (see deadlines.go).
	dlPrev, dlNext int32

	// The user (closed model): its life, its state as the loop counts it,
	// and when it is next due (its key in the timer heap).
	w     workload.User
	state uint8
	next  time.Duration

	// HTTP/2 (h2.go): the connection this user's streams go on, the
	// stream of its exchange, and what came on it.
	sess     int32
	stream   uint32 // 0: none
	h2q      bool   // waiting in the session's queue for a stream
	h2status int16  // the response's status, 0 until its final HEADERS
	unacked  int32  // DATA bytes received and not given back yet (WINDOW_UPDATE)

	// I/O layer state.
	out       []byte // epoll: unsent tail of the request
	sendsLeft int32  // io_uring: sends in flight that report their completion
	sendLen   int    // io_uring: the length of that send
	deferred  []byte // io_uring: a request waiting for that send to complete
	recvArmed bool   // io_uring: a multishot receive is armed on the socket
}

// ConnBytes is the memory a loop holds per user in its array of conns
// (the parser and the random source come on top).
const ConnBytes = int64(unsafe.Sizeof(conn{}))
