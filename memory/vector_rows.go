package memory

import "encoding/hex"

// rowReader is what both databases' query results offer for reading them
// (*sql.Rows and pgx.Rows), so that the embeddings stores of SQLite
// and PostgreSQL scan their rows alike. The caller closes them.
type rowReader interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanEmbedTexts reads rows of (id, text).
func scanEmbedTexts(rs rowReader) ([]EmbedText, error) {
	var out []EmbedText
	for rs.Next() {
		var t EmbedText
		if err := rs.Scan(&t.ID, &t.Text); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rs.Err()
}

// scanCachedVectors reads rows of (hash, vec) into vectors by hex of the
// hash; n is how many to expect at most.
func scanCachedVectors(rs rowReader, n int) (map[string][]float32, error) {
	out := make(map[string][]float32, n)
	for rs.Next() {
		var h, v []byte
		if err := rs.Scan(&h, &v); err != nil {
			return nil, err
		}
		out[hex.EncodeToString(h)] = DecodeVector(v)
	}
	return out, rs.Err()
}

// scanVectors reads rows of (seq, message_id, model, hash, vec), each
// vector in memory of its own.
func scanVectors(rs rowReader) ([]MessageVector, error) {
	var out []MessageVector
	for rs.Next() {
		var v MessageVector
		var raw []byte
		if err := rs.Scan(&v.Seq, &v.MessageID, &v.Model, &v.Hash, &raw); err != nil {
			return nil, err
		}
		v.Vec = DecodeVector(raw)
		out = append(out, v)
	}
	return out, rs.Err()
}

// eachVector calls fn with each row of (seq, message_id, model, hash,
// vec) in one reused MessageVector: fn copies what it keeps.
func eachVector(rs rowReader, fn func(MessageVector)) error {
	var v MessageVector
	var raw []byte
	for rs.Next() {
		if err := rs.Scan(&v.Seq, &v.MessageID, &v.Model, &v.Hash, &raw); err != nil {
			return err
		}
		v.Vec = decodeInto(v.Vec, raw)
		fn(v)
	}
	return rs.Err()
}
