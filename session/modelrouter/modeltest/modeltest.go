// Package modeltest is an OpenAI-compatible chat completions server for
// tests of the model router's remote tier: it answers well, late, with 429
// and Retry-After, with 500, with garbage, or with JSON that breaks the
// answer schema, as a test scripts it. It listens on the loopback only.
// Test support: only _test.go files import it (TestOnlyTestsImport).
package modeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"hcp-edge/session/modelrouter"
)

// Behaviour is how the server answers one request.
type Behaviour int

// The behaviours.
const (
	Well           Behaviour = iota // a valid answer (after Delay)
	Late                            // a valid answer after LateBy
	RateLimited                     // 429 with Retry-After: RetryAfterS
	ServerError                     // 500
	Garbage                         // 200 with a body that is not a chat completion
	SchemaBreaking                  // a chat completion whose content breaks the answer schema
	BadRequest                      // 400: the request is refused
)

// String names the behaviour.
func (b Behaviour) String() string {
	return [...]string{"well", "late", "rate-limited", "server-error", "garbage", "schema-breaking", "bad-request"}[b]
}

// Server is a running test server. Its fields may be changed between
// requests through the methods; all are safe for concurrent use.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Behaviour
	def      Behaviour
	delay    time.Duration
	lateBy   time.Duration
	retryS   int
	answer   func(modelrouter.Description) modelrouter.Answer
	requests []modelrouter.ChatRequest
	counts   map[Behaviour]int
}

// New starts a server answering Well; Close stops it.
func New() *Server {
	s := &Server{def: Well, lateBy: 2 * time.Second, retryS: 1, counts: map[Behaviour]int{}, answer: EchoLocal}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Base is the URL of the API base: give it as the model's instance.
func (s *Server) Base() string { return s.URL + "/v1" }

// Script queues behaviours for the next requests, one each; then the
// default applies.
func (s *Server) Script(b ...Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, b...)
}

// SetDefault sets the behaviour once the script is done.
func (s *Server) SetDefault(b Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = b
}

// SetDelay sets how long a Well answer takes, and LateBy a Late one.
func (s *Server) SetDelay(well, late time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay, s.lateBy = well, late
}

// SetRetryAfter sets the Retry-After seconds of a 429.
func (s *Server) SetRetryAfter(seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retryS = seconds
}

// SetAnswer sets what a valid answer says, from the description sent.
func (s *Server) SetAnswer(f func(modelrouter.Description) modelrouter.Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = f
}

// Requests returns the chat requests received so far.
func (s *Server) Requests() []modelrouter.ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]modelrouter.ChatRequest(nil), s.requests...)
}

// Count is how many requests got behaviour b.
func (s *Server) Count(b Behaviour) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[b]
}

// EchoLocal answers what the description's local tier-2 reading says (or
// the tier-1 fit's layers), with confidence 0.9: a stand-in model.
func EchoLocal(d modelrouter.Description) modelrouter.Answer {
	a := modelrouter.Answer{Material: d.Material, Confidence: 0.9, Rationale: "modeltest: echoed the local reading", Coverage: []modelrouter.Coverage{}}
	switch {
	case d.Local != nil:
		a.LayerCount, a.Coverage = d.Local.LayerCount, d.Local.Coverage
	case d.Peaks != nil:
		a.LayerCount = d.Peaks.FitLayers
		a.Coverage = []modelrouter.Coverage{{Layers: a.LayerCount, Fraction: 1}}
	}
	if a.Material == "auto" {
		a.Material = ""
	}
	return a
}

func (s *Server) next() (Behaviour, time.Duration, time.Duration, int, func(modelrouter.Description) modelrouter.Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.def
	if len(s.script) > 0 {
		b, s.script = s.script[0], s.script[1:]
	}
	s.counts[b]++
	return b, s.delay, s.lateBy, s.retryS, s.answer
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"modeltest","object":"model"}]}`)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req modelrouter.ChatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	b, delay, late, retryS, answer := s.next()
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-r.Context().Done():
			return false
		}
	}
	switch b {
	case RateLimited:
		w.Header().Set("Retry-After", strconv.Itoa(retryS))
		http.Error(w, `{"error":{"message":"rate limit"}}`, http.StatusTooManyRequests)
		return
	case ServerError:
		http.Error(w, `{"error":{"message":"internal"}}`, http.StatusInternalServerError)
		return
	case BadRequest:
		http.Error(w, `{"error":{"message":"invalid request"}}`, http.StatusBadRequest)
		return
	case Garbage:
		io.WriteString(w, "<html>upstream gateway said hello</html>")
		return
	case Late:
		if !wait(late) {
			return
		}
	default:
		if delay > 0 && !wait(delay) {
			return
		}
	}
	content := `{"layer_count": "two", "confidence": 7}`
	if b != SchemaBreaking {
		var d modelrouter.Description
		_ = json.Unmarshal([]byte(req.Messages[len(req.Messages)-1].Content), &d)
		a, _ := json.Marshal(answer(d))
		content = string(a)
	}
	out := map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": content}}},
		"usage": map[string]int{"prompt_tokens": tokens(req), "completion_tokens": (len(content) + 3) / 4},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// tokens is the server's count of the prompt: the router's own rule.
func tokens(req modelrouter.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += modelrouter.EstimateTokens(m.Content)
	}
	return n
}
