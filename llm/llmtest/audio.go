package llmtest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// Transcription is one call to /v1/audio/transcriptions.
type Transcription struct {
	Model, Language, FileName string
	Audio                     []byte
	APIKey                    string
}

// TranscribeFunc scripts the answer to a transcription: the text, or an
// HTTP error status with the text as its message.
type TranscribeFunc func(Transcription) (text string, status int)

// SetTranscriber makes the server answer /v1/audio/transcriptions with fn
// (until then it answers 404, as a chat-only server does). Uploads that are
// not audio (no Ogg, RIFF/WAVE, MP3, MP4 or WebM signature) get 400, like a
// real server that cannot decode them.
func (s *Server) SetTranscriber(fn TranscribeFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcribe = fn
}

// Transcriptions returns the transcription calls received so far.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transcription(nil), s.heard...)
}

func (s *Server) transcription(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fn := s.transcribe
	s.mu.Unlock()
	if fn == nil {
		writeError(w, http.StatusNotFound, "Unknown request URL: POST /v1/audio/transcriptions")
		return
	}
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "expected a multipart form: "+err.Error())
		return
	}
	f, fh, err := r.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "no file: "+err.Error())
		return
	}
	audio, _ := io.ReadAll(f)
	f.Close()
	tr := Transcription{Model: r.FormValue("model"), Language: r.FormValue("language"), FileName: fh.Filename, Audio: audio,
		APIKey: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
	s.mu.Lock()
	s.heard = append(s.heard, tr)
	s.mu.Unlock()
	if !isAudio(audio) {
		writeError(w, http.StatusBadRequest, "Invalid file format: the audio could not be decoded")
		return
	}
	text, status := fn(tr)
	if status != 0 && status != http.StatusOK {
		writeError(w, status, text)
		return
	}
	if r.FormValue("response_format") == "text" {
		_, _ = io.WriteString(w, text)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"text": text})
}

func isAudio(b []byte) bool {
	switch {
	case bytes.HasPrefix(b, []byte("OggS")), bytes.HasPrefix(b, []byte("RIFF")) && len(b) > 12 && string(b[8:12]) == "WAVE",
		bytes.HasPrefix(b, []byte("ID3")), len(b) > 2 && b[0] == 0xff && b[1]&0xe0 == 0xe0,
		len(b) > 8 && string(b[4:8]) == "ftyp", bytes.HasPrefix(b, []byte{0x1a, 0x45, 0xdf, 0xa3}):
		return true
	}
	return false
}
