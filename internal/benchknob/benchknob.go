// Package benchknob holds switches that only the benchmark program (bench/) sets, to measure
// what a part of the store costs by leaving it out. Nothing else sets them, and a store written
// with one set is not a sound store: the benchmark throws it away. Being internal, the package
// cannot be imported from outside this module.
package benchknob

import "sync/atomic"

// NoTextIndex, while set, makes every write of this process leave out the text index (its
// postings and statistics): `go run ./bench -search` sets it around the writes of its "without
// the text index" store, to compare bulk ingest with and without the index, and the files'
// sizes. Reads of such a store find no text.
var NoTextIndex atomic.Bool
