package engine

import (
	"unsafe"

	"github.com/throng-io/throng/internal/engine/netloop"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// Memory the executors hold per user, beside the plan's (plan.UserBytes)
// and the driver's session. TestUserBytes measures them.
const (
	// goroutineUserBytes: a user's goroutine (its stack starts at 4 KiB
	// once it has run), its user, sleeper, timer and random source.
	goroutineUserBytes = 5 << 10
	// timelineUserBytes: a timeline user's heap entry and its slot in the
	// heap, its user and random source (plan.Rand: 40 B); no goroutine of
	// its own.
	timelineUserBytes = int64(unsafe.Sizeof(entry{}) + unsafe.Sizeof(user{}) + 8 + 40)
	// loopUserBytes: a loop's conn, its slots in the run queue, timer heap
	// and idle list, and its random source.
	loopUserBytes = netloop.ConnBytes + 12 + 64
)

// UserBytes is the memory the executor of kind (resolved by Choose) holds
// for the users of plan p, at least: the driver's sessions come on top.
func UserBytes(kind string, p *plan.Plan) int64 {
	switch kind {
	case scenario.EngineEpoll, scenario.EngineIOUring:
		return int64(len(p.Users)) * loopUserBytes
	}
	timeline := make([]bool, len(p.Groups))
	for g := range p.Groups {
		timeline[g] = onTimeline(p, g)
	}
	var n int64
	for _, u := range p.Users {
		if timeline[u.Group] {
			n += timelineUserBytes
		} else {
			n += goroutineUserBytes
		}
	}
	return n
}
