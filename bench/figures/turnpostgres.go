package figures

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/memory"
)

// postgresDatabaseURL is base with its database replaced by name.
func postgresDatabaseURL(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// PostgresTurnDatabase is the turn fixture (TurnFixture, archived archived
// messages) in PostgreSQL, for one run: the SQLite fixture is copied by
// `bot migrate --to`'s code (memory.CopyToPostgres) into a database of the
// server at base named for it, once (vacuumed and analyzed as autovacuum
// leaves it; a copy made from another fixture or with other migrations is
// made again), and each run gets a fresh database cloned from that one
// (CREATE DATABASE … TEMPLATE: a file copy, seconds), as a run changes the
// conversation. It returns the run database's URL and what drops it.
func PostgresTurnDatabase(ctx context.Context, base string, archived int, progress io.Writer) (string, func(), error) {
	if progress == nil {
		progress = io.Discard
	}
	src, err := TurnFixture(ctx, archived, progress)
	if err != nil {
		return "", nil, err
	}
	sqStamp, err := os.ReadFile(filepath.Join(filepath.Dir(src), "schema.stamp"))
	if err != nil {
		return "", nil, err
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer func() { _ = admin.Close(context.Background()) }()
	name := strings.ReplaceAll(turnFixtureName(archived), "-", "_")
	fixtureURL, err := postgresDatabaseURL(base, name)
	if err != nil {
		return "", nil, err
	}
	if err := postgresTurnTemplate(ctx, admin, fixtureURL, name, strings.TrimSpace(string(sqStamp)), filepath.Dir(src), progress); err != nil {
		return "", nil, fmt.Errorf("the turn fixture in PostgreSQL: %w", err)
	}
	run := name + "_run_" + strconv.Itoa(os.Getpid())
	if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{run}.Sanitize()+` WITH (FORCE)`); err != nil {
		return "", nil, err
	}
	// The template must have no connection: the ones just closed may take
	// a moment to go.
	for try := 0; ; try++ {
		_, err = admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{run}.Sanitize()+` TEMPLATE `+pgx.Identifier{name}.Sanitize())
		if err == nil || try == 50 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", nil, fmt.Errorf("cloning the turn fixture in PostgreSQL: %w", err)
	}
	runURL, err := postgresDatabaseURL(base, run)
	if err != nil {
		return "", nil, err
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer func() { _ = c.Close(context.Background()) }()
		_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{run}.Sanitize()+` WITH (FORCE)`)
	}
	return runURL, drop, nil
}

// DropPostgresTurnFixture drops the copy of the turn fixture with archived
// archived messages that PostgresTurnDatabase made on the server at base.
func DropPostgresTurnFixture(ctx context.Context, base string, archived int) error {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }()
	_, err = c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{strings.ReplaceAll(turnFixtureName(archived), "-", "_")}.Sanitize()+` WITH (FORCE)`)
	return err
}

// postgresTurnTemplate makes sure database name (at fixtureURL) holds the
// SQLite turn fixture in dir, stamped sqStamp: made when missing or made
// from something else.
func postgresTurnTemplate(ctx context.Context, admin *pgx.Conn, fixtureURL, name, sqStamp, dir string, progress io.Writer) error {
	ident := pgx.Identifier{name}.Sanitize()
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS(SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		p, err := memory.OpenPostgres(ctx, fixtureURL) // migrates: a new migration makes the stamp stale
		if err != nil {
			return err
		}
		pv, err := p.SchemaVersion(ctx)
		var got string
		if err == nil {
			err = p.Pool().QueryRow(ctx, `SELECT stamp FROM bench_fixture_done`).Scan(&got)
		}
		_ = p.Close()
		if err == nil && got == fmt.Sprintf("%s pg%d", sqStamp, pv) {
			return nil
		}
		fmt.Fprintf(progress, "  the PostgreSQL copy of the turn fixture is missing, unfinished or made with other migrations: making it again\n")
		if _, err := admin.Exec(ctx, `DROP DATABASE `+ident+` WITH (FORCE)`); err != nil {
			return err
		}
	}
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+ident); err != nil {
		return err
	}
	p, err := memory.OpenPostgres(ctx, fixtureURL)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	pv, err := p.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "  copying the turn fixture into PostgreSQL database %s, once\n", name)
	st, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		return err
	}
	defer st.Close(context.Background())
	start, last := time.Now(), time.Now()
	if _, err := memory.CopyToPostgres(ctx, st, p, func(done, total, msgs int) {
		if time.Since(last) > 10*time.Second || done == total {
			last = time.Now()
			fmt.Fprintf(progress, "    %d messages, %s\n", msgs, time.Since(start).Round(time.Second))
		}
	}); err != nil {
		return err
	}
	for _, q := range []string{`VACUUM ANALYZE`, `CREATE TABLE bench_fixture_done (stamp TEXT NOT NULL)`} {
		if _, err := p.Pool().Exec(ctx, q); err != nil {
			return err
		}
	}
	_, err = p.Pool().Exec(ctx, `INSERT INTO bench_fixture_done VALUES ($1)`, fmt.Sprintf("%s pg%d", sqStamp, pv))
	return err
}

// TurnPostgresResult holds the big conversation's turns on each store.
type TurnPostgresResult struct {
	Postgres, SQLite       []time.Duration // the chain, per turn
	PostgresAsm, SQLiteAsm []time.Duration // its assembly
	PostgresCPU, SQLiteCPU []time.Duration // process CPU time during each turn
}

// TurnOverheadPostgres is TurnOverhead's big conversation on PostgreSQL
// (the turn fixture cloned by PostgresTurnDatabase on the server at base)
// beside the same conversation on SQLite (a copy of the fixture), as the
// application builds each (database.url set or not): the same user
// messages go to both, one turn each in turn, which goes first
// alternating, so both see the same machine. The chain is TurnOverhead's:
// everything but the LLM and the transport (on PostgreSQL the shared turn
// queue the replicas take turns from is transport too: not measured).
func TurnOverheadPostgres(ctx context.Context, base string, o TurnOptions) (TurnPostgresResult, error) {
	var res TurnPostgresResult
	src, err := TurnFixture(ctx, o.Archived, o.Progress)
	if err != nil {
		return res, err
	}
	pgURL, drop, err := PostgresTurnDatabase(ctx, base, o.Archived, o.Progress)
	if err != nil {
		return res, err
	}
	defer drop()
	sqDir, err := mkdirTemp(o.TempDir, "recall-turn-")
	if err != nil {
		return res, err
	}
	defer removeAll(sqDir)
	if err := copyFile(src, filepath.Join(sqDir, "recall.db")); err != nil {
		return res, err
	}
	pgDir, err := mkdirTemp(o.TempDir, "recall-turn-pg-")
	if err != nil {
		return res, err
	}
	defer removeAll(pgDir)
	type side struct {
		r     *rig
		asm   *latencies
		drive *convDriver
	}
	open := func(dir, dbURL string) (*side, error) {
		g := chattext.NewWords(11)
		fake := &fakeModel{replies: g.Pool(64, 12, 80, turnPeople), summaries: g.Pool(16, 60, 110, turnPeople)}
		asm := &latencies{}
		r, err := newRig(ctx, rigConfig{
			dir: dir, model: fake, bgSummary: true, databaseURL: dbURL,
			allowed: []string{"telegram:" + turnUser},
			wrapAsm: func(a chat.Assembler) chat.Assembler { return &timedAssembler{Assembler: a, lat: asm} },
		})
		if err != nil {
			return nil, err
		}
		st, err := r.store.Status(ctx, turnKey)
		if err == nil && st.Archived != int64(o.Archived) {
			err = fmt.Errorf("fixture conversation has %d archived messages, want %d", st.Archived, o.Archived)
		}
		if err != nil {
			return nil, errors.Join(err, r.close())
		}
		return &side{r: r, asm: asm, drive: &convDriver{key: turnKey, user: turnUser, name: turnName, people: turnPeople, g: chattext.NewWords(21)}}, nil
	}
	sq, err := open(sqDir, "")
	if err != nil {
		return res, err
	}
	defer sq.r.close()
	pg, err := open(pgDir, pgURL)
	if err != nil {
		return res, fmt.Errorf("on PostgreSQL: %w", err)
	}
	defer pg.r.close()
	for range o.Warmup {
		for _, s := range []*side{pg, sq} {
			if _, _, err := s.drive.turn(ctx, s.r.handler); err != nil {
				return res, err
			}
		}
	}
	pg.asm.reset()
	sq.asm.reset()
	for i := range o.Turns {
		order := []*side{pg, sq}
		if i%2 == 1 {
			order = []*side{sq, pg}
		}
		for _, s := range order {
			t, c, err := s.drive.turn(ctx, s.r.handler)
			if err != nil {
				return res, err
			}
			if s == pg {
				res.Postgres, res.PostgresCPU = append(res.Postgres, t), append(res.PostgresCPU, c)
			} else {
				res.SQLite, res.SQLiteCPU = append(res.SQLite, t), append(res.SQLiteCPU, c)
			}
		}
	}
	res.PostgresAsm, res.SQLiteAsm = pg.asm.of(turnKey), sq.asm.of(turnKey)
	return res, nil
}
