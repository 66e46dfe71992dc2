// Package chattext generates chat text for the benchmarks, deterministically
// from a seed: words drawn from a Zipf distribution over a vocabulary in
// frequency order, in sentences, with names of people mixed in.
//
// Two generators with their own vocabularies: Messages (about 3,200
// dictionary words; the store benchmarks, the archive fixture, the search
// tests) and Words (20,000 words with a long tail of made-up ones; the turn
// benchmarks and the turn fixture). The cached fixtures depend on their exact
// output: a change to either generator must bump the fixtures' names.
package chattext
