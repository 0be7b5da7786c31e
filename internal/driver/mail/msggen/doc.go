// Package msggen generates the mail driver's messages: valid MIME of an
// exact size (Build, from a Spec: the same Spec always gives the same
// bytes), the realistic size distribution (Size), the text corpus and
// codenames that make searches' expected hits known without reading a
// mailbox, and calendar objects and contacts (AppendEvent, AppendCard).
// Its random source (RNG, Mix) is deterministic so that a population and
// a run's messages are reproducible from their seeds.
package msggen
