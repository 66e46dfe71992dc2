package pgdb

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// scram authenticates with SCRAM-SHA-256 (RFC 5802, RFC 7677), the
// password method PostgreSQL uses by default. Without channel binding; the
// password is used as given (no SASLprep: the same for ASCII passwords).
func (c *Conn) scram(mechs []string) error {
	if !slices.Contains(mechs, "SCRAM-SHA-256") {
		return fmt.Errorf("the server asks for %s; only SCRAM-SHA-256 is supported", strings.Join(mechs, ", "))
	}
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	s := scramClient{password: c.cfg.Password, firstBare: "n=,r=" + base64.StdEncoding.EncodeToString(nonce)}
	c.fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,," + s.firstBare)})
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
		return s.verify(string(m.Data))
	case *pgproto3.ErrorResponse:
		return pgError(m)
	}
	return fmt.Errorf("SCRAM: unexpected %T", msg)
}

// scramClient is the client side of one SCRAM-SHA-256 exchange.
type scramClient struct {
	password  string
	firstBare string // client-first-message-bare
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
	withoutProof := "c=biws,r=" + nonce
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
