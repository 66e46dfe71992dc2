package telegramtest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/go-telegram/bot/models"
)

// files holds what the fake serves through getFile and the file download
// URL (/file/bot<token>/<file_path>), as the Bot API does for media users
// send.
type files struct {
	mu    sync.Mutex
	byID  map[string]hosted
	paths map[string][]byte
}

type hosted struct {
	path string
	size int
}

// AddFile hosts data as a file users sent (a voice note, a photo, a
// document) and returns its file_id for an update to carry.
func (f *Server) AddFile(name string, data []byte) string {
	f.files.mu.Lock()
	defer f.files.mu.Unlock()
	if f.files.byID == nil {
		f.files.byID, f.files.paths = map[string]hosted{}, map[string][]byte{}
	}
	id := fmt.Sprintf("file-%d", len(f.files.byID)+1)
	path := fmt.Sprintf("documents/%s_%s", id, name)
	f.files.byID[id] = hosted{path: path, size: len(data)}
	f.files.paths[path] = data
	return id
}

// getFileLocked answers getFile.
func (f *Server) getFile(c *Call) (any, *Err) {
	f.files.mu.Lock()
	defer f.files.mu.Unlock()
	h, ok := f.files.byID[c.Fields["file_id"]]
	if !ok {
		return nil, &Err{Code: 400, Description: "Bad Request: invalid file_id"}
	}
	return models.File{FileID: c.Fields["file_id"], FileUniqueID: "u" + c.Fields["file_id"], FileSize: int64(h.size), FilePath: h.path}, nil
}

// serveFile answers a download of a hosted file; false when the request is
// not a download.
func (f *Server) serveFile(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot")
	if !ok {
		return false
	}
	token, path, _ := strings.Cut(rest, "/")
	if token != f.Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return true
	}
	f.files.mu.Lock()
	data, ok := f.files.paths[path]
	f.files.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return true
	}
	_, _ = w.Write(data)
	return true
}
