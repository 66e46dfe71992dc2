// Package embed owns semantic retrieval (memory.embeddings): the
// write-behind worker that embeds stored messages in batches off the
// turn's path (Worker, and Reindex for `bot reindex`), and the Searcher
// that ranks a conversation's archive by the similarity of its vectors to
// a question, one embeddings call per question with a short deadline.
//
// Vectors live in the SQLite database beside the messages (memory's
// migration 0005), stored once per model and text hash. The Searcher keeps
// a compact index per conversation in memory: one sign bit per dimension
// of each vector (a brute-force Hamming scan of 100,000 messages takes
// well under a millisecond), and rescores the best candidates with their
// exact vectors read from the store.
package embed
