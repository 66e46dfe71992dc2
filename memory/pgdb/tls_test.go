package pgdb_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/recallbot/recall/memory/pgdb"
	"github.com/recallbot/recall/memory/pgtest"
)

// serverName is the name in the test server's certificate; connections
// to it (or to any name) are dialled to the cluster on 127.0.0.1.
const serverName = "db.recall.test"

// tlsCluster is a PostgreSQL server that speaks TLS with a certificate for
// serverName signed by a CA of the test's own (in caFile): TLS is required
// (hostssl) for every role but "plain", which may only connect without it
// ("hostnossl"); "scram" and "nonascii" sign in with SCRAM-SHA-256,
// "md5user" with MD5, "postgres" without a password.
type tlsCluster struct {
	*pgtest.Cluster
	caFile      string
	otherCAFile string // a CA that did not sign the server's certificate
}

func startTLSCluster(t *testing.T) *tlsCluster {
	t.Helper()
	caCert, caKey, caPEM := newCA(t, "Recall test CA")
	_, _, otherPEM := newCA(t, "Some other CA")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: serverName},
		DNSNames:     []string{serverName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := pgtest.Start(t, pgtest.ClusterOptions{
		Conf: []string{"ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'", "password_encryption = 'scram-sha-256'"},
		HBA: strings.Join([]string{
			"local all all trust",
			"hostnossl all plain 127.0.0.1/32 trust",
			"hostssl all postgres 127.0.0.1/32 trust",
			"hostssl all scram 127.0.0.1/32 scram-sha-256",
			"hostssl all nonascii 127.0.0.1/32 scram-sha-256",
			"hostssl all md5user 127.0.0.1/32 md5",
		}, "\n") + "\n",
		Files: map[string][]byte{
			"server.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			"server.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		},
	})
	dir := t.TempDir()
	tc := &tlsCluster{Cluster: c, caFile: filepath.Join(dir, "ca.crt"), otherCAFile: filepath.Join(dir, "other.crt")}
	if err := os.WriteFile(tc.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tc.otherCAFile, otherPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	tc.admin(t,
		`CREATE ROLE plain LOGIN`,
		`CREATE ROLE scram LOGIN PASSWORD 's3cret'`,
		`CREATE ROLE nonascii LOGIN`,
		`SET password_encryption = 'md5'`,
		`CREATE ROLE md5user LOGIN PASSWORD 'md5 secret'`)
	return tc
}

// admin runs statements as postgres through the Unix socket.
func (c *tlsCluster) admin(t *testing.T, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgdb.Connect(ctx, "host="+c.Dir+" port="+strconv.Itoa(c.Port)+" user=postgres dbname=postgres sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// connect opens a connection as connString says (host, user, sslmode, …),
// dialled to the cluster whatever the host, within 10 seconds.
func (c *tlsCluster) connect(t *testing.T, connString string) (*pgdb.Conn, error) {
	t.Helper()
	cfg, err := pgdb.ParseConfig(connString + " port=" + strconv.Itoa(c.Port) + " dbname=postgres connect_timeout=10")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(c.Port)
	cfg.DialFunc = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	conn, err := pgdb.ConnectConfig(context.Background(), cfg)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: connecting hung until the timeout: %v", connString, err)
	}
	return conn, err
}

// encrypted is what the server says of the session: TLS or not.
func encrypted(t *testing.T, conn *pgdb.Conn) bool {
	t.Helper()
	var ssl bool
	if err := conn.QueryRow(context.Background(), `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl); err != nil {
		t.Fatal(err)
	}
	return ssl
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Each sslmode against a server with TLS, as a user sees it: connected and
// encrypted, or refused with an error that says why (never a hang).
func TestTLSModes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a PostgreSQL cluster of its own (9 s on a busy 2-core machine); go test without -short runs it")
	}
	c := startTLSCluster(t)
	connects := []struct {
		name, conn string
		tls        bool
	}{
		{"require encrypts without checking the certificate", "host=127.0.0.1 user=postgres sslmode=require", true},
		{"verify-full with the CA and the certificate's name", "host=" + serverName + " user=postgres sslmode=verify-full sslrootcert=" + c.caFile, true},
		{"verify-ca with the CA checks the issuer, not the name", "host=127.0.0.1 user=postgres sslmode=verify-ca sslrootcert=" + c.caFile, true},
		{"require with sslrootcert checks the issuer as verify-ca", "host=127.0.0.1 user=postgres sslmode=require sslrootcert=" + c.caFile, true},
		{"prefer takes the TLS the server offers", "host=" + serverName + " user=postgres sslmode=prefer", true},
		{"prefer is the default", "host=" + serverName + " user=postgres", true},
		{"allow takes the TLS the server offers", "host=" + serverName + " user=postgres sslmode=allow", true},
		{"disable does not encrypt", "host=" + serverName + " user=plain sslmode=disable", false},
	}
	for _, tc := range connects {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := c.connect(t, tc.conn)
			if err != nil {
				t.Fatalf("%s: %v", tc.conn, err)
			}
			if got := encrypted(t, conn); got != tc.tls {
				t.Fatalf("%s: encrypted %v, want %v", tc.conn, got, tc.tls)
			}
		})
	}
	refused := []struct {
		name, conn string
		says       []string // in the error, each
	}{
		{"verify-full refuses a certificate for another name", "host=other.recall.test user=postgres sslmode=verify-full sslrootcert=" + c.caFile,
			[]string{"TLS", "certificate", "other.recall.test"}},
		{"verify-full refuses a certificate no CA it knows signed", "host=" + serverName + " user=postgres sslmode=verify-full",
			[]string{"TLS", "certificate signed by unknown authority"}},
		{"verify-ca refuses a certificate the given CA did not sign", "host=" + serverName + " user=postgres sslmode=verify-ca sslrootcert=" + c.otherCAFile,
			[]string{"TLS", "certificate"}},
		{"a server requiring TLS refuses disable with its own message", "host=" + serverName + " user=postgres sslmode=disable",
			[]string{"no pg_hba.conf entry", "no encryption", "28000"}},
		{"a role allowed only without TLS is refused with require", "host=" + serverName + " user=plain sslmode=require",
			[]string{"no pg_hba.conf entry", "28000"}},
		{"a missing sslrootcert file is named", "host=" + serverName + " user=postgres sslmode=verify-full sslrootcert=/nonexistent/root.crt",
			[]string{"sslrootcert", "/nonexistent/root.crt"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) { c.refused(t, tc.conn, tc.says...) })
	}
}

// Passwords over TLS: SCRAM-SHA-256 (with channel binding to the server's
// certificate, SCRAM-SHA-256-PLUS, which a TLS server offers, or without),
// and MD5.
func TestTLSPasswords(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a PostgreSQL cluster of its own (10 s on a busy 2-core machine); go test without -short runs it")
	}
	c := startTLSCluster(t)
	for _, tc := range []struct{ name, conn string }{
		{"SCRAM, channel binding when offered (the default)", "host=" + serverName + " user=scram password=s3cret sslmode=require"},
		{"SCRAM with channel binding required", "host=" + serverName + " user=scram password=s3cret sslmode=verify-full sslrootcert=" + c.caFile + " channel_binding=require"},
		{"SCRAM without channel binding", "host=" + serverName + " user=scram password=s3cret sslmode=require channel_binding=disable"},
		{"MD5", "host=" + serverName + " user=md5user password='md5 secret' sslmode=require"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := c.connect(t, tc.conn)
			if err != nil {
				t.Fatalf("%s: %v", tc.conn, err)
			}
			if !encrypted(t, conn) {
				t.Fatalf("%s: not encrypted", tc.conn)
			}
		})
	}
	for _, tc := range []struct {
		name, conn string
		says       []string
	}{
		{"a wrong SCRAM password", "host=" + serverName + " user=scram password=wrong sslmode=require",
			[]string{`password authentication failed for user "scram"`, "28P01"}},
		{"a wrong MD5 password", "host=" + serverName + " user=md5user password=wrong sslmode=require",
			[]string{`password authentication failed for user "md5user"`, "28P01"}},
		{"channel binding required without TLS", "host=" + serverName + " user=plain sslmode=disable channel_binding=require",
			[]string{"channel binding"}},
		{"channel binding required, the server asks no password", "host=" + serverName + " user=postgres sslmode=require channel_binding=require",
			[]string{"channel binding"}},
	} {
		t.Run(tc.name, func(t *testing.T) { c.refused(t, tc.conn, tc.says...) })
	}
}

// A password that is not ASCII signs in with SCRAM when given the way it
// was set (ALTER ROLE … PASSWORD): the server prepares it with SASLprep
// (RFC 4013: spaces mapped, some characters removed, NFKC), and so must we.
func TestSCRAMNonASCIIPasswords(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a PostgreSQL cluster of its own (19 s on a busy 2-core machine); go test without -short runs it")
	}
	c := startTLSCluster(t)
	for _, tc := range []struct{ name, set, given string }{
		{"composed accents (NFC)", "pässwörd", "pässwörd"},
		{"decomposed accents (NFD) as some keyboards type them", "pässwörd", "pa\u0308sswo\u0308rd"},
		{"a no-break space", "correct\u00a0horse", "correct\u00a0horse"},
		{"a soft hyphen (mapped to nothing)", "pass\u00adwört", "pass\u00adwört"},
		{"a full-width letter (NFKC)", "ｐässwort", "ｐässwort"},
		{"a character SASLprep prohibits (the password is used as is)", "pä\u00a0ss\ue000", "pä\u00a0ss\ue000"},
		{"Cyrillic", "пароль", "пароль"},
		{"Hebrew and Latin with a no-break space (SASLprep refuses mixed directions: used as is)", "שלום\u00a0abc", "שלום\u00a0abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.admin(t, `ALTER ROLE nonascii PASSWORD '`+strings.ReplaceAll(tc.set, "'", "''")+`'`)
			cfg := "host=" + serverName + " user=nonascii sslmode=require password='" + strings.ReplaceAll(tc.given, "'", `\'`) + "'"
			if _, err := c.connect(t, cfg); err != nil {
				t.Fatalf("password %q set, %q given: %v", tc.set, tc.given, err)
			}
		})
	}
	c.admin(t, `ALTER ROLE nonascii PASSWORD 'pässwörd'`)
	if _, err := c.connect(t, "host="+serverName+" user=nonascii sslmode=require password=passwort"); err == nil {
		t.Fatal("a different password was accepted")
	}
}

// The first SCRAM message says whether we bind to the TLS channel (RFC 5802
// section 6): "p=tls-server-end-point" when the server offers
// SCRAM-SHA-256-PLUS; "y" over TLS when it does not (so that a server that
// did, and had the offer stripped on the way, refuses); "n" when binding is
// disabled. A server of our own over TLS records what it receives.
func TestSCRAMChannelBindingFlag(t *testing.T) {
	for _, tc := range []struct {
		name, binding string
		offered       []string
		wantMech, gs2 string
	}{
		{"offered", "prefer", []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}, "SCRAM-SHA-256-PLUS", "p=tls-server-end-point,,"},
		{"not offered over TLS", "prefer", []string{"SCRAM-SHA-256"}, "SCRAM-SHA-256", "y,,"},
		{"disabled", "disable", []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}, "SCRAM-SHA-256", "n,,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan *pgproto3.SASLInitialResponse, 1)
			addr := fakeTLSServer(t, tc.offered, got)
			_, err := pgdb.Connect(context.Background(), "postgres://u:pw@"+addr+"/db?sslmode=require&connect_timeout=10&channel_binding="+tc.binding)
			if err == nil || !strings.Contains(err.Error(), "fake server") {
				t.Fatalf("want the fake server's refusal, got %v", err)
			}
			m := <-got
			if m.AuthMechanism != tc.wantMech || !strings.HasPrefix(string(m.Data), tc.gs2+"n=,r=") {
				t.Fatalf("sent %s %q, want %s %q…", m.AuthMechanism, m.Data, tc.wantMech, tc.gs2)
			}
		})
	}
}

// fakeTLSServer accepts one connection on 127.0.0.1, starts TLS, asks for
// SASL with the mechanisms offered, sends what the client answers on got
// and refuses it.
func fakeTLSServer(t *testing.T, offered []string, got chan<- *pgproto3.SASLInitialResponse) string {
	t.Helper()
	cert, key, _ := newCA(t, "fake server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = l.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if m, err := pgproto3.NewBackend(nc, nc).ReceiveStartupMessage(); err != nil {
			t.Errorf("fake server: %v", err)
			return
		} else if _, ok := m.(*pgproto3.SSLRequest); !ok {
			t.Errorf("fake server: %T before TLS", m)
			return
		}
		if _, err := nc.Write([]byte{'S'}); err != nil {
			return
		}
		tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}})
		be := pgproto3.NewBackend(tc, tc)
		if _, err := be.ReceiveStartupMessage(); err != nil {
			t.Errorf("fake server: %v", err)
			return
		}
		be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: offered})
		if err := be.Flush(); err != nil {
			return
		}
		_ = be.SetAuthType(pgproto3.AuthTypeSASL)
		m, err := be.Receive()
		if err != nil {
			t.Errorf("fake server: %v", err)
			return
		}
		r, _ := m.(*pgproto3.SASLInitialResponse)
		if r == nil {
			t.Errorf("fake server: %T, not SASLInitialResponse", m)
			return
		}
		got <- r
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28000", Message: "fake server: refused"})
		_ = be.Flush()
	}()
	return l.Addr().String()
}

// refused checks that conn is refused with an error that says each of says.
func (c *tlsCluster) refused(t *testing.T, conn string, says ...string) {
	t.Helper()
	_, err := c.connect(t, conn)
	if err == nil {
		t.Fatalf("%s: connected", conn)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: the error does not say %q: %v", conn, s, err)
		}
	}
}
