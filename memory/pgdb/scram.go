package pgdb

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// scram authenticates with SCRAM-SHA-256 (RFC 5802, RFC 7677), the
// password method PostgreSQL uses by default: over TLS bound to the
// server's certificate (SCRAM-SHA-256-PLUS, tls-server-end-point, RFC
// 5929) when the server offers it, unless ChannelBinding is disable. The
// password is prepared with SASLprep, as the server prepared it when it was
// set.
func (c *Conn) scram(mechs []string) error {
	tc, isTLS := c.nc.(*tls.Conn)
	binding := c.cfg.ChannelBinding
	plus := isTLS && binding != "disable" && slices.Contains(mechs, "SCRAM-SHA-256-PLUS")
	switch {
	case binding == "require" && !isTLS:
		return errors.New("channel_binding=require, but the connection is not TLS: channel binding needs TLS (sslmode)")
	case binding == "require" && !plus:
		return fmt.Errorf("channel_binding=require, but the server does not offer channel binding (it offers %s)", strings.Join(mechs, ", "))
	case !plus && !slices.Contains(mechs, "SCRAM-SHA-256"):
		return fmt.Errorf("the server asks for %s; only SCRAM-SHA-256 and SCRAM-SHA-256-PLUS are supported", strings.Join(mechs, ", "))
	}
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	s := scramClient{password: saslprep(c.cfg.Password), firstBare: "n=,r=" + base64.StdEncoding.EncodeToString(nonce)}
	mech, gs2, cbData := "SCRAM-SHA-256", "n,,", []byte(nil)
	switch {
	case plus:
		certs := tc.ConnectionState().PeerCertificates
		if len(certs) == 0 {
			return errors.New("SCRAM: channel binding: the server sent no certificate")
		}
		mech, gs2, cbData = "SCRAM-SHA-256-PLUS", "p=tls-server-end-point,,", endPointHash(certs[0])
	case isTLS && binding != "disable":
		// We could bind, but the server did not offer it: "y" tells a
		// server that did (and was stripped of it) to refuse.
		gs2 = "y,,"
	}
	s.cbind = base64.StdEncoding.EncodeToString(append([]byte(gs2), cbData...))
	c.fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: mech, Data: []byte(gs2 + s.firstBare)})
	if err := c.fe.Flush(); err != nil {
		return err
	}
	msg, err := c.fe.Receive()
	if err != nil {
		return err
	}
	cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			return pgError(e)
		}
		return fmt.Errorf("SCRAM: unexpected %T", msg)
	}
	final, err := s.final(string(cont.Data))
	if err != nil {
		return err
	}
	c.fe.Send(&pgproto3.SASLResponse{Data: []byte(final)})
	if err := c.fe.Flush(); err != nil {
		return err
	}
	msg, err = c.fe.Receive()
	if err != nil {
		return err
	}
	switch m := msg.(type) {
	case *pgproto3.AuthenticationSASLFinal:
		if err := s.verify(string(m.Data)); err != nil {
			return err
		}
		c.bound = plus
		return nil
	case *pgproto3.ErrorResponse:
		return pgError(m)
	}
	return fmt.Errorf("SCRAM: unexpected %T", msg)
}

// scramClient is the client side of one SCRAM-SHA-256 exchange.
type scramClient struct {
	password  string
	firstBare string // client-first-message-bare
	cbind     string // the channel binding sent (c=), base64; "biws" ("n,,") when empty
	salted    []byte
	auth      string // AuthMessage
}

// final answers the server-first-message with the client-final-message.
func (s *scramClient) final(serverFirst string) (string, error) {
	var nonce, salt string
	iter := 0
	for _, kv := range strings.Split(serverFirst, ",") {
		switch {
		case strings.HasPrefix(kv, "r="):
			nonce = kv[2:]
		case strings.HasPrefix(kv, "s="):
			salt = kv[2:]
		case strings.HasPrefix(kv, "i="):
			iter, _ = strconv.Atoi(kv[2:])
		}
	}
	clientNonce := s.firstBare[strings.Index(s.firstBare, "r=")+2:]
	if !strings.HasPrefix(nonce, clientNonce) || len(nonce) == len(clientNonce) || iter <= 0 {
		return "", errors.New("SCRAM: the server's first message is invalid")
	}
	saltBytes, err := base64.StdEncoding.DecodeString(salt)
	if err != nil {
		return "", errors.New("SCRAM: the server's salt is invalid")
	}
	s.salted, err = pbkdf2.Key(sha256.New, s.password, saltBytes, iter, 32)
	if err != nil {
		return "", fmt.Errorf("SCRAM: %w", err)
	}
	cbind := s.cbind
	if cbind == "" {
		cbind = "biws"
	}
	withoutProof := "c=" + cbind + ",r=" + nonce
	s.auth = s.firstBare + "," + serverFirst + "," + withoutProof
	clientKey := hmacSHA256(s.salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	sig := hmacSHA256(stored[:], s.auth)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey), nil
}

// verify checks the server-final-message: the server knew the password too.
func (s *scramClient) verify(serverFinal string) error {
	if !strings.HasPrefix(serverFinal, "v=") {
		return fmt.Errorf("SCRAM: the server refused: %s", serverFinal)
	}
	got, err := base64.StdEncoding.DecodeString(serverFinal[2:])
	if err != nil {
		return errors.New("SCRAM: the server's signature is invalid")
	}
	want := hmacSHA256(hmacSHA256(s.salted, "Server Key"), s.auth)
	if !hmac.Equal(got, want) {
		return errors.New("SCRAM: the server's signature does not match: not the server that knows the password")
	}
	return nil
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// endPointHash is the tls-server-end-point channel binding of the server's
// certificate (RFC 5929 section 4.1): its hash with the hash function of
// its signature, SHA-256 for MD5 and SHA-1.
func endPointHash(cert *x509.Certificate) []byte {
	var h hash.Hash
	switch cert.SignatureAlgorithm {
	case x509.SHA384WithRSA, x509.ECDSAWithSHA384, x509.SHA384WithRSAPSS:
		h = sha512.New384()
	case x509.SHA512WithRSA, x509.ECDSAWithSHA512, x509.SHA512WithRSAPSS:
		h = sha512.New()
	default:
		h = sha256.New()
	}
	h.Write(cert.Raw)
	return h.Sum(nil)
}
