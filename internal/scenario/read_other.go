//go:build !unix

package scenario

// openNonBlock: no such flag here; the Stat before the open refuses FIFOs.
const openNonBlock = 0
