package caller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// Errors of the extension requests (Capabilities, FetchArtifact).
var (
	// ErrRefused: the callee refused the request; the error is a
	// *RefusedError naming the reason.
	ErrRefused = errors.New("caller: request refused")
	// ErrChecksumMismatch: the fetched bytes do not hash to the checksum the
	// callee (or the caller's FetchOpts.Checksum) states; nothing written
	// should be trusted.
	ErrChecksumMismatch = errors.New("caller: artifact checksum mismatch")
	// ErrTooLarge: the artifact is larger than FetchOpts.MaxSize.
	ErrTooLarge = errors.New("caller: artifact too large")
	// ErrBadChunk: a chunk that does not continue the artifact (another
	// uri, offset, size or checksum than the chunks before it).
	ErrBadChunk = errors.New("caller: inconsistent artifact chunk")
)

// answersRequest reports whether d answers an extension request waiting
// here (a task_rejected of the inbox's refusal path).
func (c *Client) answersRequest(d amqp091.Delivery) bool {
	irt, _ := d.Headers[wire.HeaderInReplyTo].(string)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.requests[strings.ToLower(irt)]
	return ok
}

// response hands an answer to the request it names (hcp-in-reply-to) and
// acks it; an answer nobody waits for (a second answer to a republished
// request, or one after its caller gave up) is counted a duplicate.
func (c *Client) response(env *wire.Envelope, d amqp091.Delivery) error {
	irt, _ := d.Headers[wire.HeaderInReplyTo].(string)
	c.mu.Lock()
	ch := c.requests[strings.ToLower(irt)]
	c.mu.Unlock()
	if ch == nil {
		c.duplicates.Add(1)
		return d.Ack(false)
	}
	select {
	case ch <- env:
		c.delivered.Add(1)
	default: // answered already
		c.duplicates.Add(1)
	}
	return d.Ack(false)
}

// request publishes env to calleeID through the outbox, republishing it
// with the same message_id every ResubmitInterval, and returns its answer.
// A refusal is a *RefusedError.
func (c *Client) request(ctx context.Context, calleeID string, env *wire.Envelope) (*wire.Envelope, error) {
	m, err := outbox.CommandFor(calleeID, env)
	if err != nil {
		return nil, fmt.Errorf("caller: %s: %w", env.Type, err)
	}
	ch := make(chan *wire.Envelope, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.requests[m.MessageID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.requests, m.MessageID)
		c.mu.Unlock()
	}()
	if _, err := c.ob.Append(m); err != nil {
		return nil, fmt.Errorf("caller: %w", err)
	}
	tk := time.NewTicker(c.opts.ResubmitInterval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("caller: %s unanswered: %w", env.Type, ctx.Err())
		case <-c.ctx.Done():
			return nil, ErrClosed
		case ans := <-ch:
			return ans, refusal(env.Type, ans)
		case <-tk.C:
			m.CreatedUnixNano = 0
			if _, err := c.ob.Append(m); err != nil {
				c.log.Warn("caller: republish", "message_id", m.MessageID, "err", err)
				continue
			}
			c.resubmits.Add(1)
		}
	}
}

// refusal turns a request_refused or task_rejected answer into a
// *RefusedError (nil for any other answer).
func refusal(t wire.Type, ans *wire.Envelope) error {
	switch ans.Type {
	case wire.TypeRequestRefused:
		r, err := ans.RequestRefused()
		if err != nil {
			return err
		}
		return &RefusedError{Command: t, Code: r.ReasonCode, Message: r.ReasonMessage}
	case wire.TypeTaskRejected:
		r, err := ans.TaskRejected()
		if err != nil {
			return err
		}
		return &RefusedError{Command: t, Code: r.ReasonCode, Message: r.ReasonMessage}
	}
	return nil
}

// Capabilities asks Opts.CalleeID for the capability declarations this
// caller may use (its broker login decides, per the callee's access
// control list), each with its JSON Schemas and safety envelope. name,
// when not empty, asks for that capability only. A caller the callee does
// not know gets a *RefusedError or, when its login maps to no caller at
// all, no answer (ctx's deadline ends the wait).
func (c *Client) Capabilities(ctx context.Context, name string) (*wire.CapabilitiesResponse, error) {
	return c.CapabilitiesOf(ctx, c.opts.CalleeID, name)
}

// CapabilitiesOf is Capabilities of another callee than Opts.CalleeID.
func (c *Client) CapabilitiesOf(ctx context.Context, calleeID, name string) (*wire.CapabilitiesResponse, error) {
	env, err := wire.NewEnvelope(nil, &wire.CapabilitiesRequest{Capability: name}, time.Now())
	if err != nil {
		return nil, fmt.Errorf("caller: capabilities_request: %w", err)
	}
	ans, err := c.request(ctx, calleeID, env)
	if err != nil {
		return nil, err
	}
	return ans.CapabilitiesResponse()
}

// FetchOpts tune FetchArtifactWith.
type FetchOpts struct {
	// ChunkSize is the data asked for per chunk (default
	// wire.DefaultArtifactChunk, at most wire.MaxArtifactChunk).
	ChunkSize int
	// MaxSize refuses a larger artifact before any byte is written
	// (default DefaultFetchMax).
	MaxSize int64
	// Checksum, when set, is the checksum task_completed listed for the
	// artifact ("sha256:…"): the callee's must equal it.
	Checksum string
	// CalleeID is the callee to ask (default Opts.CalleeID).
	CalleeID string
}

// DefaultFetchMax is FetchOpts.MaxSize's default (64 MiB).
const DefaultFetchMax = 64 << 20

// Fetched describes a fetched artifact.
type Fetched struct {
	URI       string
	SizeBytes int64
	Checksum  string // "sha256:…", verified over the bytes written
	Chunks    int
}

// FetchArtifact fetches the artifact at uri (hcp://{session}/artifacts/
// {name}) of one of this caller's sessions over the broker, chunk by
// chunk, writing it to w, and verifies the sha256 of what it wrote against
// the checksum the callee recorded in task_completed. On ErrChecksumMismatch
// the bytes already written must be discarded.
func (c *Client) FetchArtifact(ctx context.Context, uri string, w io.Writer) (Fetched, error) {
	return c.FetchArtifactWith(ctx, uri, w, FetchOpts{})
}

// FetchArtifactWith is FetchArtifact with options.
func (c *Client) FetchArtifactWith(ctx context.Context, uri string, w io.Writer, o FetchOpts) (Fetched, error) {
	sid, _, err := wire.ParseArtifactURI(uri)
	if err != nil {
		return Fetched{}, fmt.Errorf("caller: %w", err)
	}
	suid, err := uuid.Parse(sid)
	if err != nil {
		return Fetched{}, fmt.Errorf("caller: artifact uri %q: the session is not a UUID: %w", uri, err)
	}
	if o.CalleeID == "" {
		o.CalleeID = c.opts.CalleeID
	}
	a := newAssembler(uri, w, o)
	for {
		env, err := wire.NewEnvelope(&suid, &wire.ArtifactRequest{URI: uri, Offset: a.offset, ChunkSize: o.ChunkSize}, time.Now())
		if err != nil {
			return a.result(), fmt.Errorf("caller: artifact_request: %w", err)
		}
		ans, err := c.request(ctx, o.CalleeID, env)
		if err != nil {
			return a.result(), err
		}
		ch, err := ans.ArtifactChunk()
		if err != nil {
			return a.result(), fmt.Errorf("caller: answer to artifact_request: %w", err)
		}
		done, err := a.add(ch)
		if err != nil || done {
			return a.result(), err
		}
	}
}

// assembler checks a stream of chunks and hashes what it writes.
type assembler struct {
	uri    string
	w      io.Writer
	o      FetchOpts
	h      hash.Hash
	offset int64
	size   int64
	sum    string
	chunks int
}

func newAssembler(uri string, w io.Writer, o FetchOpts) *assembler {
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultFetchMax
	}
	return &assembler{uri: uri, w: w, o: o, h: sha256.New(), size: -1}
}

func (a *assembler) result() Fetched {
	return Fetched{URI: a.uri, SizeBytes: a.offset, Checksum: a.sum, Chunks: a.chunks}
}

// add takes the next chunk: done once the final one is written and
// verified.
func (a *assembler) add(ch *wire.ArtifactChunk) (done bool, err error) {
	switch {
	case ch.URI != a.uri:
		return false, fmt.Errorf("%w: uri %q, asked for %q", ErrBadChunk, ch.URI, a.uri)
	case ch.Offset != a.offset:
		return false, fmt.Errorf("%w: offset %d, asked for %d", ErrBadChunk, ch.Offset, a.offset)
	case a.size >= 0 && (ch.SizeBytes != a.size || ch.Checksum != a.sum):
		return false, fmt.Errorf("%w: size %d %s, earlier chunks said %d %s", ErrBadChunk, ch.SizeBytes, ch.Checksum, a.size, a.sum)
	case len(ch.Data) == 0 && !ch.Final:
		return false, fmt.Errorf("%w: an empty chunk before the end", ErrBadChunk)
	}
	if a.size < 0 {
		if ch.SizeBytes > a.o.MaxSize {
			return false, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrTooLarge, a.uri, ch.SizeBytes, a.o.MaxSize)
		}
		if a.o.Checksum != "" && ch.Checksum != a.o.Checksum {
			return false, fmt.Errorf("%w: the callee states %s, task_completed listed %s", ErrChecksumMismatch, ch.Checksum, a.o.Checksum)
		}
		a.size, a.sum = ch.SizeBytes, ch.Checksum
	}
	if _, err := a.w.Write(ch.Data); err != nil {
		return false, fmt.Errorf("caller: writing %s: %w", a.uri, err)
	}
	a.h.Write(ch.Data)
	a.offset += int64(len(ch.Data))
	a.chunks++
	if !ch.Final {
		return false, nil
	}
	if got := "sha256:" + hex.EncodeToString(a.h.Sum(nil)); got != a.sum {
		return false, fmt.Errorf("%w: %s: received bytes hash to %s, the artifact's checksum is %s", ErrChecksumMismatch, a.uri, got, a.sum)
	}
	return true, nil
}

// Preview asks Opts.CalleeID to preview a task of capability (version: a
// version or range, "" for the highest) with inputs on its simulated rig
// (docs/PROTOCOL-NOTES.md, "Preview"): no hardware is touched and no
// session is opened. The answer's Prediction is the callee's prediction as
// JSON. Inputs the capability refuses are a *RefusedError with code
// invalid_input; a callee busy with another preview refuses unavailable.
func (c *Client) Preview(ctx context.Context, capability, version string, inputs json.RawMessage) (*wire.PreviewResponse, error) {
	env, err := wire.NewEnvelope(nil, &wire.PreviewRequest{Capability: capability, CapabilityVersion: version, Inputs: inputs}, time.Now())
	if err != nil {
		return nil, fmt.Errorf("caller: preview_request: %w", err)
	}
	ans, err := c.request(ctx, c.opts.CalleeID, env)
	if err != nil {
		return nil, err
	}
	return ans.PreviewResponse()
}
