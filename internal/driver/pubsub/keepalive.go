package pubsub

import (
	"errors"

	"github.com/throng-io/throng/internal/driver"
)

// The keep-alive finds dead connections in bounded time. A passive
// subscriber sends nothing of its own, so a connection that died without
// a word (a server that stopped answering, a cut the network did not
// report) would go unnoticed for as long as it lasts, and its subscriber
// would silently stop receiving. So every connection that has received
// nothing for half the keep-alive is pinged (NATS PING, MQTT PINGREQ), as
// is an MQTT connection that has sent nothing for half of it (the
// protocol's own rule); when nothing at all has arrived for another half
// after the ping, the connection is taken for dead, closed and
// reconnected, and what its subscriber was owed meanwhile is missed while
// disconnected. A dead connection is thus found within the keep-alive
// (plus the readers' one-second tick).

// errDead is why a connection found dead is broken.
var errDead = driver.Errorf(driver.Timeout, errors.New("no answer to a ping within the keep-alive: the connection was taken for dead"))

// keepAliveCheck applies the keep-alive at now (Unix ns): it queues a ping
// in out when one is due, and reports whether the connection is dead.
// Call with mu held.
func (ep *endpoint) keepAliveCheck(now int64) (dead bool) {
	ka := ep.keepAlive
	if ka <= 0 || ep.state != epReady {
		return false
	}
	half := ka / 2
	if ep.pingSent != 0 {
		// feed clears pingSent: nothing at all arrived since the ping.
		return now-ep.pingSent >= half
	}
	if now-ep.lastRecv >= half || (ep.pc.pingWhileSending() && now-ep.lastSent.Load() >= half) {
		ep.out = ep.pc.ping(ep.out)
		ep.pingSent = now
	}
	return false
}
