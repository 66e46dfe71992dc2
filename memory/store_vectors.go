package memory

// JSON is the file backend (owners who chose JSON storage), for the
// embeddings of their messages (json_vectors.go).
func (s *Store) JSON() *JSON { return s.json }

// Embeddings is the database's embeddings store: PostgreSQL's with
// database.url, else SQLite's. (Owners on a JSON file keep theirs beside
// it: JSON.)
func (s *Store) Embeddings() EmbeddingStore {
	if s.pg != nil {
		return s.pg
	}
	return s.sqlite
}
