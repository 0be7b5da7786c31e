// Package wirelimit holds the bounds both pub/sub wire codecs (mqttwire,
// natswire) keep to: how much of a payload they hand over, and how large a
// payload they keep whole. It is its own package so that the codecs and
// package pubsub, whose message header fixes Prefix, share one number.
package wirelimit

// Prefix is how many bytes of a payload's start the codecs hand over (all
// of it when it is shorter): pubsub's message header (run, stream,
// sequence number, send time), which is all a subscriber needs to account
// a delivery. Payloads are otherwise skipped, never copied.
const Prefix = 32

// Whole bounds a payload kept whole, for the distributed run's control
// connection; a longer one is a protocol error.
const Whole = 4 << 20
