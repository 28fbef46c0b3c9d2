package devicetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"

	"hcp-edge/device"
)

// Frame is one request/response exchange on a byte stream: what the host wrote,
// then what the instrument answered (empty for an instrument that stays silent).
type Frame struct {
	W []byte // bytes written by the host
	R []byte // bytes the instrument answers with
}

// ErrUnexpectedWrite is returned by Playback.Write when the bytes written do not
// match the next expected frame, or no frame is left.
var ErrUnexpectedWrite = errors.New("devicetest: unexpected write")

// ErrUnconsumed is returned by Playback.Close when expected frames (or bytes of
// a frame) were not consumed.
var ErrUnconsumed = errors.New("devicetest: playback not fully consumed")

// ErrNoResponse is returned by Playback.Read when there is nothing to read: the
// instrument is silent. It wraps os.ErrDeadlineExceeded, which is what a read
// with a deadline returns on a real line when nothing arrives.
var ErrNoResponse = fmt.Errorf("devicetest: no response pending: %w", os.ErrDeadlineExceeded)

// Playback is an io.ReadWriteCloser that replays recorded frames, in the manner
// of periph's conntest.Playback. Writes must reproduce each frame's W in order
// (they may come in any number of pieces); once a frame's W is complete, its R
// becomes readable. A write that strays from the script fails the test (through
// T, when set) and returns ErrUnexpectedWrite. Read returns ErrNoResponse when
// nothing is pending instead of blocking. Close reports frames, partial writes
// and unread response bytes left over, failing the test as well.
//
// A Playback is safe for concurrent use.
type Playback struct {
	// T, when set, gets an Errorf for every mismatch; Close's error is reported
	// through it too.
	T testing.TB
	// ReadChunk, when > 0, caps the bytes one Read returns, to exercise a
	// driver's handling of replies that arrive in pieces.
	ReadChunk int
	// AllowUnread lets Close succeed with response bytes left unread.
	AllowUnread bool

	mu      sync.Mutex
	frames  []Frame
	next    int    // index of the frame being written
	written []byte // bytes of frames[next].W received so far
	pending []byte // response bytes not yet read
	closed  bool
}

// NewPlayback returns a Playback of frames that reports mismatches to t.
func NewPlayback(t testing.TB, frames ...Frame) *Playback {
	p := &Playback{T: t, frames: slices.Clone(frames)}
	p.releaseUnsolicited()
	return p
}

// releaseUnsolicited makes the responses of frames with an empty W (bytes the
// instrument sends on its own) readable as soon as they are reached.
func (p *Playback) releaseUnsolicited() {
	for p.next < len(p.frames) && len(p.frames[p.next].W) == 0 {
		p.pending = append(p.pending, p.frames[p.next].R...)
		p.next++
	}
}

func (p *Playback) fail(err error) error {
	if p.T != nil {
		p.T.Helper()
		p.T.Errorf("%v", err)
	}
	return err
}

// Write implements io.Writer.
func (p *Playback) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, fmt.Errorf("devicetest: playback write: %w", device.ErrClosed)
	}
	for i, c := range b {
		if p.next >= len(p.frames) {
			return i, p.fail(fmt.Errorf("%w: %q after the last frame", ErrUnexpectedWrite, b[i:]))
		}
		want := p.frames[p.next].W
		if c != want[len(p.written)] {
			got := append(slices.Clone(p.written), b[i:]...)
			return i, p.fail(fmt.Errorf("%w: frame %d: got %q, want %q", ErrUnexpectedWrite, p.next, got, want))
		}
		p.written = append(p.written, c)
		if len(p.written) == len(want) {
			p.pending = append(p.pending, p.frames[p.next].R...)
			p.written = nil
			p.next++
			p.releaseUnsolicited()
		}
	}
	return len(b), nil
}

// Read implements io.Reader.
func (p *Playback) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, fmt.Errorf("devicetest: playback read: %w", device.ErrClosed)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if len(p.pending) == 0 {
		return 0, ErrNoResponse
	}
	n := len(p.pending)
	if p.ReadChunk > 0 {
		n = min(n, p.ReadChunk)
	}
	n = copy(b, p.pending[:n])
	p.pending = p.pending[n:]
	return n, nil
}

// Remaining returns how many frames have not been completely written yet.
func (p *Playback) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.frames) - p.next
}

// Close implements io.Closer; it fails (and fails the test) with ErrUnconsumed
// if frames, part of a frame, or (unless AllowUnread) response bytes are left.
// Later calls return nil.
func (p *Playback) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	switch {
	case p.next < len(p.frames):
		return p.fail(fmt.Errorf("%w: %d of %d frames left (next W %q, %d bytes of it written)",
			ErrUnconsumed, len(p.frames)-p.next, len(p.frames), p.frames[p.next].W, len(p.written)))
	case len(p.pending) > 0 && !p.AllowUnread:
		return p.fail(fmt.Errorf("%w: %d response bytes unread: %q", ErrUnconsumed, len(p.pending), p.pending))
	}
	return nil
}

// Record is an io.ReadWriter that passes everything through to RW and records
// the exchange as frames for a later Playback: each Write after a Read starts a
// new frame; the bytes read until the next such Write are its response.
//
// A Record is safe for concurrent use, though frames are only meaningful when
// one request is in flight at a time.
type Record struct {
	// RW is the real line.
	RW io.ReadWriter

	mu      sync.Mutex
	frames  []Frame
	readNow bool // the last operation was a read
}

// NewRecord returns a Record wrapping rw.
func NewRecord(rw io.ReadWriter) *Record { return &Record{RW: rw} }

// Write implements io.Writer; the bytes actually written are recorded.
func (r *Record) Write(b []byte) (int, error) {
	n, err := r.RW.Write(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > 0 {
		if len(r.frames) == 0 || r.readNow {
			r.frames = append(r.frames, Frame{})
			r.readNow = false
		}
		f := &r.frames[len(r.frames)-1]
		f.W = append(f.W, b[:n]...)
	}
	return n, err
}

// Read implements io.Reader; the bytes actually read are recorded.
func (r *Record) Read(b []byte) (int, error) {
	n, err := r.RW.Read(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > 0 {
		if len(r.frames) == 0 {
			r.frames = append(r.frames, Frame{}) // unsolicited bytes
		}
		f := &r.frames[len(r.frames)-1]
		f.R = append(f.R, b[:n]...)
		r.readNow = true
	}
	return n, err
}

// Close closes RW if it is an io.Closer.
func (r *Record) Close() error {
	if c, ok := r.RW.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Frames returns a deep copy of the frames recorded so far.
func (r *Record) Frames() []Frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Frame, len(r.frames))
	for i, f := range r.frames {
		out[i] = Frame{W: bytes.Clone(f.W), R: bytes.Clone(f.R)}
	}
	return out
}

var (
	_ io.ReadWriteCloser = (*Playback)(nil)
	_ io.ReadWriteCloser = (*Record)(nil)
)
