package pgdb

import (
	"context"
	"crypto/md5"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Conn is one connection to PostgreSQL, used by one goroutine at a time.
// Results are read whole before a call returns (no result holds the
// connection), and a call whose context ends closes the connection (after
// asking the server to cancel what it runs).
type Conn struct {
	cfg    *Config
	nc     net.Conn
	fe     *pgproto3.Frontend
	pid    uint32
	secret []byte
	// stmts are the statements prepared on this connection, by their SQL.
	stmts  map[string]*stmt
	nstmts int
	broken bool
	// bound is set when the server signed us in with channel binding
	// (SCRAM-SHA-256-PLUS).
	bound bool
	// txStatus is the last ReadyForQuery's: 'I' idle, 'T' in a
	// transaction, 'E' in a failed one.
	txStatus byte
	pending  []*Notification // arrived during other work, not yet waited for
	idleAt   time.Time       // when the pool last got it back
}

// maxStmts bounds the statements prepared on one connection; past it, the
// oldest are forgotten on the server too.
const maxStmts = 512

// stmt is a statement prepared on one connection.
type stmt struct {
	name   string
	params []uint32 // the parameters' type OIDs
	fields []field
}

// field is a result column: its name, type and the format asked for.
type field struct {
	name   string
	oid    uint32
	format int16
}

// Notification is one NOTIFY received on a connection that LISTENs.
type Notification struct {
	PID     uint32
	Channel string
	Payload string
}

// PgError is an error the server reported.
type PgError struct {
	Severity string
	Code     string // SQLSTATE
	Message  string
	Detail   string
	Hint     string
}

func (e *PgError) Error() string {
	return e.Severity + ": " + e.Message + " (SQLSTATE " + e.Code + ")"
}

// CommandTag is what the server says a statement did ("INSERT 0 3").
type CommandTag string

// RowsAffected is the number of rows the statement inserted, updated,
// deleted, selected or copied.
func (t CommandTag) RowsAffected() int64 {
	s := string(t)
	i := strings.LastIndexByte(s, ' ')
	n, _ := strconv.ParseInt(s[i+1:], 10, 64)
	return n
}

func (t CommandTag) String() string { return string(t) }

// errBroken is returned when the connection failed earlier.
var errBroken = errors.New("pgdb: the connection to PostgreSQL is closed")

// Connect opens a connection to the database at connString.
func Connect(ctx context.Context, connString string) (*Conn, error) {
	cfg, err := ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	return ConnectConfig(ctx, cfg)
}

// ConnectConfig opens a connection as cfg says.
func ConnectConfig(ctx context.Context, cfg *Config) (*Conn, error) {
	if cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
	}
	network, addr := cfg.address()
	nc, err := cfg.DialFunc(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	c := &Conn{cfg: cfg, nc: nc, stmts: map[string]*stmt{}}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	err = c.startup(ctx)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = c.nc.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	_ = c.nc.SetDeadline(time.Time{})
	return c, nil
}

func (cfg *Config) address() (network, addr string) {
	port := strconv.Itoa(int(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		return "unix", cfg.Host + "/.s.PGSQL." + port
	}
	return "tcp", net.JoinHostPort(cfg.Host, port)
}

// startup negotiates TLS, authenticates and waits until the server is ready.
func (c *Conn) startup(ctx context.Context) error {
	if c.cfg.SSLMode != "disable" && !strings.HasPrefix(c.cfg.Host, "/") {
		if err := c.startTLS(ctx); err != nil {
			return err
		}
	}
	c.fe = pgproto3.NewFrontend(c.nc, c.nc)
	params := map[string]string{"user": c.cfg.User, "database": c.cfg.Database}
	for k, v := range c.cfg.RuntimeParams {
		params[k] = v
	}
	c.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: params})
	if err := c.fe.Flush(); err != nil {
		return err
	}
	for {
		msg, err := c.fe.Receive()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.AuthenticationOk:
			if c.cfg.ChannelBinding == "require" && !c.bound {
				return errors.New("channel_binding=require, but the server signed us in without channel binding (SCRAM-SHA-256-PLUS over TLS)")
			}
		case *pgproto3.ParameterStatus, *pgproto3.NoticeResponse:
		case *pgproto3.AuthenticationCleartextPassword, *pgproto3.AuthenticationMD5Password:
			if c.cfg.ChannelBinding == "require" {
				// Not the password to a server that did not prove it knows it.
				return errors.New("channel_binding=require, but the server asks for a password without channel binding (SCRAM-SHA-256-PLUS over TLS)")
			}
			if m, ok := m.(*pgproto3.AuthenticationMD5Password); ok {
				c.fe.Send(&pgproto3.PasswordMessage{Password: md5Password(c.cfg.User, c.cfg.Password, m.Salt[:])})
			} else {
				c.fe.Send(&pgproto3.PasswordMessage{Password: c.cfg.Password})
			}
			if err := c.fe.Flush(); err != nil {
				return err
			}
		case *pgproto3.AuthenticationSASL:
			if err := c.scram(m.AuthMechanisms); err != nil {
				return err
			}
		case *pgproto3.BackendKeyData:
			c.pid, c.secret = m.ProcessID, append([]byte(nil), m.SecretKey...)
		case *pgproto3.ReadyForQuery:
			c.txStatus = m.TxStatus
			return nil
		case *pgproto3.ErrorResponse:
			return pgError(m)
		default:
			return fmt.Errorf("unexpected %T while connecting", msg)
		}
	}
}

func md5Password(user, password string, salt []byte) string {
	h := md5.Sum([]byte(password + user))
	h = md5.Sum(append([]byte(hex.EncodeToString(h[:])), salt...))
	return "md5" + hex.EncodeToString(h[:])
}

// startTLS asks the server for TLS and starts it, as sslmode says.
func (c *Conn) startTLS(ctx context.Context) error {
	req, _ := (&pgproto3.SSLRequest{}).Encode(nil)
	if _, err := c.nc.Write(req); err != nil {
		return err
	}
	var b [1]byte
	if _, err := io.ReadFull(c.nc, b[:]); err != nil {
		return err
	}
	mode := c.cfg.SSLMode
	if b[0] != 'S' {
		if mode == "prefer" || mode == "allow" {
			return nil
		}
		return fmt.Errorf("the server does not offer TLS (sslmode=%s)", mode)
	}
	// prefer, allow and require check nothing (require with a root
	// certificate checks as verify-ca, as libpq); verify-ca checks who
	// signed the certificate, verify-full that too and the host name.
	tc := &tls.Config{ServerName: c.cfg.Host, InsecureSkipVerify: mode != "verify-full"}
	if root := c.cfg.SSLRootCert; root != "" && root != "system" {
		pem, err := os.ReadFile(root)
		if err != nil {
			return fmt.Errorf("reading sslrootcert: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("sslrootcert %s holds no certificate", root)
		}
	}
	if mode == "verify-ca" || (mode == "require" && c.cfg.SSLRootCert != "") {
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: tc.RootCAs, Intermediates: x509.NewCertPool()}
			for _, cert := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(cert)
			}
			if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
				return fmt.Errorf("failed to verify certificate: %w", err)
			}
			return nil
		}
	}
	t := tls.Client(c.nc, tc)
	if err := t.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS: %w", err)
	}
	c.nc = t
	return nil
}

// Close ends the connection.
func (c *Conn) Close(ctx context.Context) error {
	if c.broken {
		return nil
	}
	c.broken = true
	if c.fe != nil {
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		c.fe.Send(&pgproto3.Terminate{})
		_ = c.fe.Flush()
	}
	return c.nc.Close()
}

// IsClosed tells whether the connection was closed or failed.
func (c *Conn) IsClosed() bool { return c.broken }

// fail marks the connection unusable after an I/O or protocol error.
func (c *Conn) fail(err error) error {
	if !c.broken {
		c.broken = true
		_ = c.nc.Close()
	}
	return err
}

// watch makes ctx's end interrupt the connection's I/O (and ask the server
// to cancel the statement); done tells whether it did, with ctx's error.
func (c *Conn) watch(ctx context.Context) (done func() error) {
	if ctx.Done() == nil {
		return func() error { return nil }
	}
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetDeadline(time.Unix(1, 0))
		go c.cancelRequest()
	})
	return func() error {
		if stop() {
			return nil
		}
		_ = c.fail(nil) // the connection is spent: ctx cut its I/O mid-message
		return ctx.Err()
	}
}

// cancelRequest asks the server, on a connection of its own, to cancel
// what this connection runs.
func (c *Conn) cancelRequest() {
	if c.secret == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	network, addr := c.cfg.address()
	nc, err := c.cfg.DialFunc(ctx, network, addr)
	if err != nil {
		return
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := (&pgproto3.CancelRequest{ProcessID: c.pid, SecretKey: c.secret}).Encode(nil)
	if err == nil {
		_, _ = nc.Write(b)
		_, _ = nc.Read(make([]byte, 1)) // the server closes it when done
	}
}

// run starts a call: nothing when the connection is gone or ctx has ended.
func (c *Conn) run(ctx context.Context, fn func() error) error {
	if c.broken {
		return errBroken
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done := c.watch(ctx)
	err := fn()
	if cerr := done(); cerr != nil {
		return cerr
	}
	return err
}

// result is one statement's result, read whole.
type result struct {
	fields []field
	rows   [][][]byte
	tag    CommandTag
	err    error
}

// receive reads the next message that is not a notice or notification
// (those are kept), failing the connection on an I/O error.
func (c *Conn) receive() (pgproto3.BackendMessage, error) {
	for {
		msg, err := c.fe.Receive()
		if err != nil {
			return nil, c.fail(err)
		}
		switch m := msg.(type) {
		case *pgproto3.NoticeResponse, *pgproto3.ParameterStatus:
			continue
		case *pgproto3.NotificationResponse:
			c.pending = append(c.pending, &Notification{PID: m.PID, Channel: m.Channel, Payload: m.Payload})
			continue
		}
		return msg, nil
	}
}

// flush sends what was queued.
func (c *Conn) flush() error {
	if err := c.fe.Flush(); err != nil {
		return c.fail(err)
	}
	return nil
}

func pgError(m *pgproto3.ErrorResponse) *PgError {
	return &PgError{Severity: m.Severity, Code: m.Code, Message: m.Message, Detail: m.Detail, Hint: m.Hint}
}

// copyRow copies a DataRow's values into one allocation.
func copyRow(vals [][]byte) [][]byte {
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if v == nil {
			continue
		}
		start := len(buf)
		buf = append(buf, v...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

func fieldsOf(m *pgproto3.RowDescription, format func(oid uint32) int16) []field {
	fs := make([]field, len(m.Fields))
	for i, f := range m.Fields {
		fs[i] = field{name: string(f.Name), oid: f.DataTypeOID, format: f.Format}
		if format != nil {
			fs[i].format = format(f.DataTypeOID)
		}
	}
	return fs
}

// simple runs sql (one statement or several) with the simple protocol:
// text results, no arguments.
func (c *Conn) simple(ctx context.Context, sql string) ([]result, error) {
	var out []result
	err := c.run(ctx, func() error {
		c.fe.Send(&pgproto3.Query{String: sql})
		if err := c.flush(); err != nil {
			return err
		}
		var cur result
		var firstErr error
		for {
			msg, err := c.receive()
			if err != nil {
				return err
			}
			switch m := msg.(type) {
			case *pgproto3.RowDescription:
				cur.fields = fieldsOf(m, nil)
			case *pgproto3.DataRow:
				cur.rows = append(cur.rows, copyRow(m.Values))
			case *pgproto3.CommandComplete:
				cur.tag = CommandTag(m.CommandTag)
				out = append(out, cur)
				cur = result{}
			case *pgproto3.EmptyQueryResponse:
				out = append(out, cur)
				cur = result{}
			case *pgproto3.ErrorResponse:
				if firstErr == nil {
					firstErr = pgError(m)
				}
			case *pgproto3.ReadyForQuery:
				c.txStatus = m.TxStatus
				return firstErr
			case *pgproto3.CopyInResponse:
				c.fe.Send(&pgproto3.CopyFail{Message: "COPY FROM STDIN is not supported"})
				if err := c.flush(); err != nil {
					return err
				}
			default:
				return c.fail(fmt.Errorf("pgdb: unexpected %T", msg))
			}
		}
	})
	return out, err
}

// resultFormat is the format asked for a column of type oid: binary for
// bytea, times and arrays of numbers, text or bytes (exact and cheap to
// read: search reads postings of thousands of numbers), text for the rest.
func resultFormat(oid uint32) int16 {
	switch oid {
	case oidBytea, oidTimestamptz, oidTimestamp,
		oidInt2Array, oidInt4Array, oidInt8Array, oidFloat4Array, oidFloat8Array, oidTextArray, oidByteaArray:
		return 1
	}
	return 0
}

// prepare prepares the statements not yet prepared on this connection, in
// one round trip.
func (c *Conn) prepare(sqls []string) error {
	if len(c.stmts)+len(sqls) > maxStmts {
		for q, st := range c.stmts {
			c.fe.SendClose(&pgproto3.Close{ObjectType: 'S', Name: st.name})
			delete(c.stmts, q)
		}
	}
	var todo []*stmt
	var todoSQL []string
	for _, q := range sqls {
		if _, ok := c.stmts[q]; ok {
			continue
		}
		dup := false
		for _, t := range todoSQL {
			dup = dup || t == q
		}
		if dup {
			continue
		}
		c.nstmts++
		st := &stmt{name: "pgdb_" + strconv.Itoa(c.nstmts)}
		c.fe.SendParse(&pgproto3.Parse{Name: st.name, Query: q})
		c.fe.SendDescribe(&pgproto3.Describe{ObjectType: 'S', Name: st.name})
		todo = append(todo, st)
		todoSQL = append(todoSQL, q)
	}
	if len(todo) == 0 {
		return nil
	}
	c.fe.SendSync(&pgproto3.Sync{})
	if err := c.flush(); err != nil {
		return err
	}
	i := 0
	var firstErr error
	for {
		msg, err := c.receive()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.ParseComplete, *pgproto3.CloseComplete:
		case *pgproto3.ParameterDescription:
			if i < len(todo) {
				todo[i].params = append([]uint32(nil), m.ParameterOIDs...)
			}
		case *pgproto3.RowDescription:
			if i < len(todo) {
				todo[i].fields = fieldsOf(m, resultFormat)
				c.stmts[todoSQL[i]] = todo[i]
			}
			i++
		case *pgproto3.NoData:
			if i < len(todo) {
				c.stmts[todoSQL[i]] = todo[i]
			}
			i++
		case *pgproto3.ErrorResponse:
			if firstErr == nil {
				firstErr = pgError(m)
			}
		case *pgproto3.ReadyForQuery:
			c.txStatus = m.TxStatus
			return firstErr
		default:
			return c.fail(fmt.Errorf("pgdb: unexpected %T while preparing", msg))
		}
	}
}

// query is one statement with its arguments.
type query struct {
	sql  string
	args []any
}

// extended runs queries with the extended protocol in one pipeline ending
// in one Sync (statements prepared first, in one more round trip when some
// are new): one round trip, and one implicit transaction when none is open.
// A failed statement fails the ones after it.
func (c *Conn) extended(ctx context.Context, qs []query) ([]result, error) {
	out := make([]result, len(qs))
	err := c.run(ctx, func() error {
		sqls := make([]string, len(qs))
		for i, q := range qs {
			sqls[i] = q.sql
		}
		if err := c.prepare(sqls); err != nil {
			return err
		}
		sts := make([]*stmt, len(qs))
		binds := make([]pgproto3.Bind, len(qs))
		for i, q := range qs {
			st := c.stmts[q.sql]
			sts[i] = st
			if len(q.args) != len(st.params) {
				return fmt.Errorf("pgdb: the statement takes %d arguments, got %d", len(st.params), len(q.args))
			}
			b := &binds[i]
			b.PreparedStatement = st.name
			b.Parameters = make([][]byte, len(q.args))
			b.ParameterFormatCodes = make([]int16, len(q.args))
			for j, a := range q.args {
				v, format, err := encodeArg(a, st.params[j])
				if err != nil {
					return fmt.Errorf("pgdb: argument $%d: %w", j+1, err)
				}
				b.Parameters[j], b.ParameterFormatCodes[j] = v, format
			}
			b.ResultFormatCodes = make([]int16, len(st.fields))
			for j, f := range st.fields {
				b.ResultFormatCodes[j] = f.format
			}
		}
		for i := range qs {
			c.fe.SendBind(&binds[i])
			c.fe.SendExecute(&pgproto3.Execute{})
		}
		c.fe.SendSync(&pgproto3.Sync{})
		if err := c.flush(); err != nil {
			return err
		}
		i := 0
		var firstErr error
		for {
			msg, err := c.receive()
			if err != nil {
				return err
			}
			switch m := msg.(type) {
			case *pgproto3.BindComplete:
				if i < len(out) {
					out[i].fields = sts[i].fields
				}
			case *pgproto3.DataRow:
				if i < len(out) {
					out[i].rows = append(out[i].rows, copyRow(m.Values))
				}
			case *pgproto3.CommandComplete:
				if i < len(out) {
					out[i].tag = CommandTag(m.CommandTag)
				}
				i++
			case *pgproto3.EmptyQueryResponse:
				i++
			case *pgproto3.ErrorResponse:
				firstErr = pgError(m)
				for ; i < len(out); i++ {
					out[i].err = firstErr
				}
			case *pgproto3.ReadyForQuery:
				c.txStatus = m.TxStatus
				c.forgetStale(firstErr)
				return firstErr
			default:
				return c.fail(fmt.Errorf("pgdb: unexpected %T", msg))
			}
		}
	})
	if err != nil {
		for i := range out {
			if out[i].err == nil && out[i].tag == "" { // not run, or not to its end
				out[i].err = err
			}
		}
	}
	return out, err
}

// exec runs one statement: the simple protocol without arguments (several
// statements may go at once), else the extended one.
func (c *Conn) exec(ctx context.Context, sql string, args []any) (result, error) {
	if len(args) == 0 {
		rs, err := c.simple(ctx, sql)
		if err != nil {
			return result{err: err}, err
		}
		if len(rs) == 0 {
			return result{}, nil
		}
		return rs[len(rs)-1], nil
	}
	rs, err := c.extended(ctx, []query{{sql, args}})
	return rs[0], err
}

// Ping checks that the server answers.
func (c *Conn) Ping(ctx context.Context) error {
	return c.run(ctx, func() error {
		c.fe.SendSync(&pgproto3.Sync{})
		if err := c.flush(); err != nil {
			return err
		}
		for {
			msg, err := c.receive()
			if err != nil {
				return err
			}
			switch m := msg.(type) {
			case *pgproto3.ReadyForQuery:
				c.txStatus = m.TxStatus
				return nil
			case *pgproto3.ErrorResponse:
				return c.fail(pgError(m))
			}
		}
	})
}

// WaitForNotification waits for the next NOTIFY on a channel the
// connection LISTENs on.
func (c *Conn) WaitForNotification(ctx context.Context) (*Notification, error) {
	if len(c.pending) > 0 {
		n := c.pending[0]
		c.pending = c.pending[1:]
		return n, nil
	}
	var n *Notification
	err := c.run(ctx, func() error {
		for {
			msg, err := c.fe.Receive()
			if err != nil {
				return c.fail(err)
			}
			switch m := msg.(type) {
			case *pgproto3.NotificationResponse:
				n = &Notification{PID: m.PID, Channel: m.Channel, Payload: m.Payload}
				return nil
			case *pgproto3.ErrorResponse:
				return c.fail(pgError(m))
			}
		}
	})
	return n, err
}

// forgetStale forgets the prepared statements when the server says one no
// longer fits (a table changed under it: "cached plan must not change
// result type") or is gone: the next run prepares them again, as pgx does.
func (c *Conn) forgetStale(err error) {
	var pe *PgError
	if errors.As(err, &pe) && (pe.Code == "0A000" || pe.Code == "26000") {
		clear(c.stmts)
	}
}
