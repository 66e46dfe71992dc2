package memory

// JSON is the file backend (owners who chose JSON storage), for the
// embeddings of their messages (json_vectors.go).
func (s *Store) JSON() *JSON { return s.json }
