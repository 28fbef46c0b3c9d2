package modelrouter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// ChatRequest is the body of POST {instance}/chat/completions.
type ChatRequest struct {
	Model          string            `json:"model"`
	Messages       []ChatMessage     `json:"messages"`
	Temperature    float64           `json:"temperature"`
	MaxTokens      int               `json:"max_tokens,omitempty"`
	ResponseFormat map[string]string `json:"response_format,omitempty"`
}

// ChatMessage is one message of a chat.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatResponse is the part of a chat completion the router reads.
type ChatResponse struct {
	Choices []struct {
		Message ChatMessage `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// maxBody caps what the client reads of a reply.
const maxBody = 1 << 20

// apiKey reads the model's key from its file or environment variable ("" if
// it names neither).
func apiKey(m *Model) (string, error) {
	switch {
	case m.APIKeyFile != "":
		b, err := os.ReadFile(m.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("modelrouter: %s: api key: %w", m.ID, err)
		}
		return strings.TrimSpace(string(b)), nil
	case m.APIKeyEnv != "":
		return os.Getenv(m.APIKeyEnv), nil
	}
	return "", nil
}

// complete sends one chat completion to instance and returns the answer,
// validated against AnswerSchema, and the token usage (the server's, or the
// router's estimate when it reports none).
func complete(ctx context.Context, hc Doer, m *Model, key, instance, prompt string, estIn int) (Answer, int, int, error) {
	fail := func(o Outcome, status int, err error) (Answer, int, int, error) {
		return Answer{}, 0, 0, &InvokeError{Model: m.ID, Instance: instance, Outcome: o, Status: status, Err: err}
	}
	body, _ := json.Marshal(ChatRequest{
		Model: m.Name, Temperature: 0, MaxTokens: maxAnswerTokens,
		ResponseFormat: map[string]string{"type": "json_object"},
		Messages:       []ChatMessage{{Role: "system", Content: systemPrompt()}, {Role: "user", Content: prompt}},
	})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(instance, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return fail(InvalidRequest, 0, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(context.Cause(ctx), errAttemptTimeout):
			return fail(Canceled, 0, err)
		case errors.Is(err, context.DeadlineExceeded), errors.Is(context.Cause(ctx), errAttemptTimeout), isTimeout(err):
			return fail(Timeout, 0, err)
		}
		return fail(Unreachable, 0, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if ctx.Err() != nil || isTimeout(err) {
			return fail(Timeout, resp.StatusCode, err)
		}
		return fail(Unreachable, resp.StatusCode, err)
	}
	switch sc := resp.StatusCode; {
	case sc == http.StatusTooManyRequests:
		return Answer{}, 0, 0, &InvokeError{Model: m.ID, Instance: instance, Outcome: RateLimit, Status: sc,
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()), Err: errors.New(snippet(raw))}
	case sc == http.StatusRequestTimeout:
		return fail(Timeout, sc, errors.New(snippet(raw)))
	case sc >= 500:
		return fail(ServerError, sc, errors.New(snippet(raw)))
	case sc >= 400:
		return fail(InvalidRequest, sc, errors.New(snippet(raw)))
	case sc != http.StatusOK:
		return fail(BadAnswer, sc, fmt.Errorf("unexpected status"))
	}
	var cr ChatResponse
	if err := json.Unmarshal(raw, &cr); err != nil || len(cr.Choices) == 0 {
		return fail(BadAnswer, resp.StatusCode, fmt.Errorf("not a chat completion: %s", snippet(raw)))
	}
	content := strings.TrimSpace(cr.Choices[0].Message.Content)
	content = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(content, "```json"), "```"), "```")
	a, err := ParseAnswer([]byte(content))
	in, out := cr.Usage.PromptTokens, cr.Usage.CompletionTokens
	if in == 0 {
		in = estIn
	}
	if out == 0 {
		out = EstimateTokens(content)
	}
	if err != nil {
		return Answer{}, in, out, &InvokeError{Model: m.ID, Instance: instance, Outcome: BadAnswer, Status: resp.StatusCode, Err: err}
	}
	return a, in, out, nil
}

// errAttemptTimeout is the cause of an attempt's context when its own
// timeout (three typical latencies) passed.
var errAttemptTimeout = errors.New("attempt timed out")

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date;
// 0 when absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
