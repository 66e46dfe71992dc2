//go:build ignore

// Command gen writes the compact rank tables embedded by package bpe from
// the .tiktoken files of github.com/pkoukk/tiktoken-go-loader (the same
// files the reference tokenizer loads):
//
//	go run gen.go
//
// Each table is "BPE1", the token count as a little-endian uint32, then
// every token in rank order as one length byte followed by its bytes.
// cl100k_base's is written gzipped (cl100k_base.bpe.gz): older models use
// it, and its 0.28 MB of binary saved cost 0.74 MB of heap only there.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

func main() {
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		raw, err := assets.Assets.ReadFile(name + ".tiktoken")
		if err != nil {
			log.Fatal(err)
		}
		out, err := compact(raw)
		if err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		file := name + ".bpe"
		if name == "cl100k_base" {
			var z bytes.Buffer
			w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
			w.Write(out)
			if err := w.Close(); err != nil {
				log.Fatal(err)
			}
			file, out = file+".gz", z.Bytes()
		}
		if err := os.WriteFile(file, out, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d bytes\n", file, len(out))
	}
}

// compact turns "base64token rank" lines into the embedded format; ranks
// must run 0, 1, 2, … so the position of a token is its rank.
func compact(raw []byte) ([]byte, error) {
	var body bytes.Buffer
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" {
			continue
		}
		tok64, rankS, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: no rank", n+1)
		}
		tok, err := base64.StdEncoding.DecodeString(tok64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		rank, err := strconv.Atoi(rankS)
		if err != nil || rank != n {
			return nil, fmt.Errorf("line %d: rank %q, want %d", n+1, rankS, n)
		}
		if len(tok) == 0 || len(tok) > 255 {
			return nil, fmt.Errorf("line %d: token of %d bytes", n+1, len(tok))
		}
		body.WriteByte(byte(len(tok)))
		body.Write(tok)
		n++
	}
	out := []byte("BPE1")
	out = binary.LittleEndian.AppendUint32(out, uint32(n))
	return append(out, body.Bytes()...), nil
}
