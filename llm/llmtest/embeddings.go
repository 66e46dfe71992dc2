package llmtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"

	"time"
	"unicode"
)

// The fake /v1/embeddings: deterministic vectors in which paraphrases are
// close. A text's vector is the normalized sum of one pseudo-random vector
// per meaningful word, where the words of a small synonym table share one
// vector ("automobile" and "car", "physician" and "doctor"): two texts
// that say the same thing in those words point the same way, texts with
// nothing in common are nearly orthogonal. The model name seeds the
// vectors, so two models' vectors are not comparable (as with real ones).

// DefaultEmbeddingDims is the vector size when a request asks for none.
const DefaultEmbeddingDims = 64

// EmbeddingRequest is one call to /v1/embeddings.
type EmbeddingRequest struct {
	Model      string
	Input      []string
	Dimensions int
	APIKey     string
}

// EmbeddingScript scripts the answer to one embeddings call; the zero value
// answers with the vectors of Vector.
type EmbeddingScript struct {
	Status int           // an HTTP error status to answer with; 0 = 200
	Delay  time.Duration // wait this long first (ends early if the client goes away)
	Hang   bool          // never answer; returns when the client goes away
	// Gate, when set, is received from before answering (a test releases
	// the call when it wants).
	Gate <-chan struct{}
}

type embedState struct {
	script func(EmbeddingRequest) EmbeddingScript
	calls  []EmbeddingRequest
}

// OnEmbeddings sets how each /v1/embeddings call is answered (nil: always
// with Vector).
func (s *Server) OnEmbeddings(f func(EmbeddingRequest) EmbeddingScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embed.script = f
}

// EmbeddingCalls returns every embeddings call received, in order.
func (s *Server) EmbeddingCalls() []EmbeddingRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbeddingRequest(nil), s.embed.calls...)
}

// EmbeddedTexts counts the texts embedded so far (every input of every
// call that was answered or not).
func (s *Server) EmbeddedTexts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.embed.calls {
		n += len(c.Input)
	}
	return n
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "Use POST for /v1/embeddings")
		return
	}
	var in struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Dimensions int             `json:"dimensions"`
		Encoding   string          `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	var texts []string
	if err := json.Unmarshal(in.Input, &texts); err != nil {
		var one string
		if err := json.Unmarshal(in.Input, &one); err != nil {
			writeError(w, http.StatusBadRequest, "input must be a string or an array of strings")
			return
		}
		texts = []string{one}
	}
	if in.Model == "" {
		writeError(w, http.StatusBadRequest, "you must provide a model parameter")
		return
	}
	if in.Encoding != "" && in.Encoding != "float" {
		writeError(w, http.StatusBadRequest, "this fake answers encoding_format float only")
		return
	}
	req := EmbeddingRequest{Model: in.Model, Input: texts, Dimensions: in.Dimensions,
		APIKey: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
	s.mu.Lock()
	s.embed.calls = append(s.embed.calls, req)
	script := s.embed.script
	s.mu.Unlock()
	var sc EmbeddingScript
	if script != nil {
		sc = script(req)
	}
	if sc.Gate != nil {
		select {
		case <-sc.Gate:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	if !s.stall(r, sc.Hang, sc.Delay) {
		return
	}
	if sc.Status != 0 && sc.Status != http.StatusOK {
		writeError(w, sc.Status, http.StatusText(sc.Status))
		return
	}
	dims := in.Dimensions
	if dims <= 0 {
		dims = DefaultEmbeddingDims
	}
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []datum `json:"data"`
		Model  string  `json:"model"`
		Usage  usage   `json:"usage"`
	}{Object: "list", Model: in.Model, Data: make([]datum, 0, len(texts))}
	for i, t := range texts {
		out.Data = append(out.Data, datum{Object: "embedding", Index: i, Embedding: Vector(in.Model, t, dims)})
		out.Usage.PromptTokens += len(strings.Fields(t))
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	writeJSON(w, http.StatusOK, out)
}

// synonyms maps words to the concept they share a vector with.
var synonyms = func() map[string]string {
	groups := [][]string{
		{"car", "automobile", "vehicle", "auto"},
		{"doctor", "physician", "medic", "gp"},
		{"move", "relocate", "relocation", "moving", "moved"},
		{"apartment", "flat", "condo"},
		{"house", "home"},
		{"buy", "purchase", "bought", "purchased"},
		{"dog", "puppy", "pup", "hound"},
		{"cat", "kitten", "kitty"},
		{"job", "work", "career", "employment", "position"},
		{"film", "movie", "cinema"},
		{"trip", "journey", "travel", "vacation", "holiday", "voyage"},
		{"sick", "ill", "unwell", "flu"},
		{"start", "begin", "began", "started"},
		{"big", "large", "huge"},
		{"small", "little", "tiny"},
		{"child", "kid", "kids", "children"},
		{"food", "meal", "dinner", "lunch"},
		{"happy", "glad", "joyful", "pleased"},
		{"sad", "unhappy", "upset"},
		{"phone", "telephone", "mobile", "cellphone"},
		{"money", "cash", "salary", "pay"},
		{"wedding", "marriage", "married", "marry"},
		{"school", "university", "college", "class"},
		{"book", "novel", "read", "reading"},
		{"song", "music", "tune"},
	}
	m := map[string]string{}
	for _, g := range groups {
		for _, w := range g {
			m[w] = g[0]
		}
	}
	return m
}()

// stopwords carry no meaning of their own.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("a an the and or but of to in on at for with about from by is are was were be been am " +
		"i you he she it we they me my your his her its our their them this that these those what which who whom " +
		"when where why how do does did done have has had not no so if then than just very can could would should will " +
		"there here up out over any some all get got go went new one") {
		m[w] = true
	}
	return m
}()

// concepts returns the meaningful words of text, synonyms folded.
func concepts(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if stopwords[w] {
			continue
		}
		if c, ok := synonyms[w]; ok {
			out = append(out, c)
			continue
		}
		if len(w) > 4 && strings.HasSuffix(w, "s") {
			if c, ok := synonyms[w[:len(w)-1]]; ok {
				out = append(out, c)
				continue
			}
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	return out
}

// Vector is the fake's embedding of text by model, dims long and of unit
// length (all zeros for a text without meaningful words).
func Vector(model, text string, dims int) []float32 {
	sum := make([]float64, dims)
	for _, c := range concepts(text) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(model))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(c))
		x := h.Sum64()
		for i := range sum {
			// splitmix64: a deterministic stream of numbers per concept
			x += 0x9e3779b97f4a7c15
			z := x
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			z ^= z >> 31
			sum[i] += float64(int64(z)) / math.MaxInt64
		}
	}
	var norm float64
	for _, v := range sum {
		norm += v * v
	}
	out := make([]float32, dims)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, v := range sum {
		out[i] = float32(v / norm)
	}
	return out
}
