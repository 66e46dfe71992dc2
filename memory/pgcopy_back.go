package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Copying a PostgreSQL database back into a data directory's SQLite file:
// `bot migrate --from postgres://…`. The same engine as CopyToPostgres
// (copyJob): owner by owner, each read back from SQLite and verified (counts
// and fingerprint), then the side tables. Rows keep their ids, so the
// SQLite file exports what PostgreSQL exported, byte for byte.
//
// The target must be empty — a copy merged into another bot's data would
// verify as different and leave both mixed — unless it holds an unfinished
// copy from the same database: CopyBackMarker, written before the first
// owner and removed once everything verified, says so. Then the copy
// resumes: owners that verify are skipped, the rest are completed. A store
// opened on a directory with the marker is refused (half a copy would
// answer as if it were the bot's whole memory).

// CopyBackMarker is the file in the data directory that marks a copy from
// PostgreSQL begun and not finished; it holds the database's address
// (host, port, database, schema; never the password).
const CopyBackMarker = "copying-from-postgres"

// ErrTargetNotEmpty: the data directory a copy from PostgreSQL was to fill
// holds data already.
var ErrTargetNotEmpty = errors.New("the data directory is not empty")

// ErrUnfinishedCopy: the data directory holds a copy from PostgreSQL that
// was interrupted (CopyBackMarker).
var ErrUnfinishedCopy = errors.New("the data directory holds an unfinished copy from PostgreSQL")

// CopyFromPostgres copies every owner of src and its side tables into the
// SQLite file of the data directory dir (created when missing), verifying
// each owner. See above for when dir may hold data already.
func CopyFromPostgres(ctx context.Context, src *Postgres, dir string, progress CopyProgress) (CopyReport, error) {
	return copyFromPostgres(ctx, src, dir, progress, copyPartMessages)
}

func copyFromPostgres(ctx context.Context, src *Postgres, dir string, progress CopyProgress, part int) (rep CopyReport, err error) {
	from := src.Address()
	marker := filepath.Join(dir, CopyBackMarker)
	began, err := os.ReadFile(marker)
	switch {
	case err == nil && strings.TrimSpace(string(began)) != from:
		return rep, fmt.Errorf("%w from %s (%s): finish it with --from pointing there, or copy into another, empty data directory",
			ErrUnfinishedCopy, strings.TrimSpace(string(began)), marker)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return rep, fmt.Errorf("reading %s: %w", marker, err)
	}
	resuming := err == nil
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	if !resuming {
		if what, err := dirHolds(ctx, dir); err != nil {
			return rep, err
		} else if what != "" {
			return rep, fmt.Errorf("%w: %s holds %s; copy into a new data directory (data.dir, RECALL_DATA_DIR) or move that aside first", ErrTargetNotEmpty, dir, what)
		}
		if err := writeSynced(marker, from+"\n"); err != nil {
			return rep, fmt.Errorf("marking the copy begun: %w", err)
		}
	}
	dst, err := OpenSQLite(ctx, filepath.Join(dir, DatabaseFile))
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, dst.Close()) }()
	rep, err = copyJob{src: src, dst: dst, into: "SQLite", part: part, progress: progress}.run(ctx)
	if err != nil {
		return rep, err
	}
	if err := os.Remove(marker); err != nil {
		return rep, fmt.Errorf("marking the copy finished: %w", err)
	}
	return rep, syncDir(dir)
}

// dirHolds says what data dir holds ("" when none): owners or side rows in
// its SQLite file, per-user JSON files.
func dirHolds(ctx context.Context, dir string) (string, error) {
	var parts []string
	if ents, err := os.ReadDir(filepath.Join(dir, "json")); err == nil {
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, strconv.Itoa(n)+" per-user JSON files")
		}
	}
	path := filepath.Join(dir, DatabaseFile)
	if _, err := os.Stat(path); err == nil {
		s, err := OpenSQLite(ctx, path)
		if err != nil {
			return "", err
		}
		defer s.Close()
		owners, err := s.Owners(ctx)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", path, err)
		}
		side, err := s.readSide(ctx)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", path, err)
		}
		if n := len(owners); n > 0 {
			parts = append(parts, fmt.Sprintf("%d owners' data in %s", n, DatabaseFile))
		}
		if n := len(side.access) + len(side.pairing) + len(side.usage) + len(side.handled); n > 0 {
			parts = append(parts, fmt.Sprintf("%d access, usage or handled-id rows in %s", n, DatabaseFile))
		}
	}
	return strings.Join(parts, " and "), nil
}

// writeSynced writes a small file durably (file and directory synced).
func writeSynced(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Address names the database the pool connects to — host, port, database
// and schema (search_path) — without the password.
func (p *Postgres) Address() string {
	c := p.pool.Config().ConnConfig
	a := fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
	if sp := c.RuntimeParams["search_path"]; sp != "" {
		a += "?search_path=" + sp
	}
	return a
}
