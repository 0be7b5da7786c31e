package runner

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
)

// RunID names a run in every process that runs a segment of it, and in
// no other run (result.Meta.RunID): the pub/sub family puts it in its
// subjects and messages, so that two runs on one broker never meet and the
// segments of one run always do. A process that runs the whole plan draws
// one at random. A controller draws one and sends it to its agents
// (agent.PlanRequest.RunID). Segments started by hand (--segment k/n,
// n > 1) cannot talk: each derives it from what every segment of one
// launch is given alike — the scenario's text, its seed, and the settings
// applied but the segment (start_at and weights included: set them in m's
// Overrides first) — so they agree, and two launches of the same plan
// differ by their start_at.
func RunID(m result.Meta, seg plan.Segment) string {
	if seg.N <= 1 {
		return NewRunID()
	}
	h := sha256.New()
	h.Write([]byte(m.SourceSHA256))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, m.Seed, 10))
	keys := make([]string, 0, len(m.Overrides))
	for k := range m.Overrides {
		if k != "segment" && k != "--segment" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{'='})
		h.Write([]byte(m.Overrides[k]))
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// NewRunID is a random run id.
func NewRunID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
