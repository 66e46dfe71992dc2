package memory

import (
	"io"
	"io/fs"
	"sort"
)

// WriteSchemaFingerprint writes to w what decides the content of a database
// this package writes: the format of the search index terms and every
// migration (name and body), in order. A cached database built by a program
// (a benchmark fixture) hashes it to know when it must be rebuilt.
func WriteSchemaFingerprint(w io.Writer) error {
	if _, err := io.WriteString(w, searchIndexFormat); err != nil {
		return err
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		body, err := migrationFiles.ReadFile(n)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, n); err != nil {
			return err
		}
		if _, err := w.Write(body); err != nil {
			return err
		}
	}
	return nil
}
