package memory

// Switches that turn an optional part of SQLite.Search off, so that the
// benchmarks measure each part beside the plain version in one run. Not
// safe while searches run.

// WithoutSearchPruning ranks every conversation exactly, whatever its size
// (every doclist read whole), until restore is called.
func (s *SQLite) WithoutSearchPruning() (restore func()) {
	old := s.tune
	s.tune = &exactSearchTuning
	return func() { s.tune = old }
}

// WithoutPostingsCache reads every doclist from the index, as if no search
// had run before, until restore is called.
func (s *SQLite) WithoutPostingsCache() (restore func()) {
	old, full := s.postings, s.full
	s.postings, s.full = nil, nil
	return func() { s.postings, s.full = old, full }
}

// WithoutFullIndexes reads big conversations' doclists from the index
// (through the postings cache) instead of their indexes in memory, until
// restore is called.
func (s *SQLite) WithoutFullIndexes() (restore func()) {
	old := s.full
	s.full = nil
	return func() { s.full = old }
}
