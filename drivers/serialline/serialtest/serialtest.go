package serialtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Handler answers one request (terminator stripped by the split function) and
// returns the bytes to send back; nil means silence.
type Handler func(req []byte) []byte

// Peer is the instrument side of a pty.
type Peer struct {
	t     testing.TB
	link  string
	split bufio.SplitFunc

	mu      sync.Mutex
	master  *os.File
	slave   *os.File
	handler Handler
	wg      sync.WaitGroup
}

// NewPeer opens a pty pair and a symlink to its slave in t.TempDir. Cleanup
// stops the responder and closes everything.
func NewPeer(t testing.TB) *Peer {
	t.Helper()
	p := &Peer{t: t, link: filepath.Join(t.TempDir(), "tty")}
	if err := p.openPty(); err != nil {
		t.Fatalf("serialtest: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

func (p *Peer) openPty() error {
	ptmx, slave, err := pty.Open()
	if err != nil {
		return fmt.Errorf("open pty: %w", err)
	}
	// pty.Open leaves the master in blocking mode (it calls Fd), so Close
	// would not unblock a Read: re-open it in non-blocking mode, which puts
	// it under the runtime poller.
	master, err := pollable(ptmx)
	if err != nil {
		slave.Close()
		return fmt.Errorf("pty master: %w", err)
	}
	if err := rawMode(int(slave.Fd())); err != nil {
		master.Close()
		slave.Close()
		return fmt.Errorf("raw mode: %w", err)
	}
	_ = os.Remove(p.link)
	if err := os.Symlink(slave.Name(), p.link); err != nil {
		master.Close()
		slave.Close()
		return fmt.Errorf("symlink: %w", err)
	}
	p.mu.Lock()
	p.master, p.slave = master, slave
	p.mu.Unlock()
	return nil
}

func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func rawMode(fd int) error {
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	tio.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	tio.Oflag &^= unix.OPOST
	tio.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	tio.Cflag &^= unix.CSIZE | unix.PARENB
	tio.Cflag |= unix.CS8
	tio.Cc[unix.VMIN] = 1
	tio.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, tio)
}

// Path is the symlink the driver opens.
func (p *Peer) Path() string { return p.link }

// SetHandler replaces the handler used for the next requests.
func (p *Peer) SetHandler(h Handler) {
	p.mu.Lock()
	p.handler = h
	p.mu.Unlock()
}

// Serve starts answering requests split by split with h.
func (p *Peer) Serve(split bufio.SplitFunc, h Handler) {
	p.mu.Lock()
	p.split = split
	p.handler = h
	master := p.master
	p.mu.Unlock()
	p.wg.Add(1)
	go p.loop(master, split)
}

func (p *Peer) loop(master *os.File, split bufio.SplitFunc) {
	defer p.wg.Done()
	sc := bufio.NewScanner(master)
	sc.Buffer(make([]byte, 4096), 1<<16)
	sc.Split(split)
	for sc.Scan() {
		req := bytes.Clone(sc.Bytes())
		p.mu.Lock()
		h := p.handler
		p.mu.Unlock()
		if h == nil {
			continue
		}
		if reply := h(req); len(reply) > 0 {
			if _, err := master.Write(reply); err != nil {
				return
			}
		}
	}
}

// Write sends b to the driver unsolicited (stale bytes, noise).
func (p *Peer) Write(b []byte) {
	p.mu.Lock()
	m := p.master
	p.mu.Unlock()
	if _, err := m.Write(b); err != nil {
		p.t.Errorf("serialtest: write: %v", err)
	}
}

// Replace closes the pty (the driver's next I/O fails) and opens a new one
// behind the same symlink, served like the old one.
func (p *Peer) Replace() {
	p.t.Helper()
	p.closePty()
	p.wg.Wait()
	if err := p.openPty(); err != nil {
		p.t.Fatalf("serialtest: replace: %v", err)
	}
	p.mu.Lock()
	split, master := p.split, p.master
	p.mu.Unlock()
	if split != nil {
		p.wg.Add(1)
		go p.loop(master, split)
	}
}

func (p *Peer) closePty() {
	p.mu.Lock()
	m, s := p.master, p.slave
	p.mu.Unlock()
	if m != nil {
		m.Close()
	}
	if s != nil {
		s.Close()
	}
}

// Stop closes the pty and waits for the responder goroutine.
func (p *Peer) Stop() {
	p.closePty()
	p.wg.Wait()
}

// SplitOn is a split function for requests ending with term.
func SplitOn(term []byte) bufio.SplitFunc {
	return func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.Index(data, term); i >= 0 {
			return i + len(term), data[:i], nil
		}
		return 0, nil, nil
	}
}

// Exchange is one request and the reply to it (nil: silence).
type Exchange struct {
	Req   string
	Reply string
}

// Script plays back a transcript of exchanges in order.
type Script struct {
	t    testing.TB
	mu   sync.Mutex
	want []Exchange
	next int
}

// NewScript returns a playback of exchanges; t's cleanup fails the test when
// some were not consumed.
func NewScript(t testing.TB, exchanges []Exchange) *Script {
	s := &Script{t: t, want: exchanges}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next != len(s.want) {
			t.Errorf("serialtest: playback: %d of %d exchanges not consumed, next %q", len(s.want)-s.next, len(s.want), s.want[s.next].Req)
		}
	})
	return s
}

// Handler answers with the recorded replies, failing the test on a request
// out of order.
func (s *Script) Handler(req []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.want) {
		s.t.Errorf("serialtest: playback: unexpected request %q after the end of the script", req)
		return nil
	}
	x := s.want[s.next]
	if string(req) != x.Req {
		s.t.Errorf("serialtest: playback: request %d is %q, want %q", s.next, req, x.Req)
		return nil
	}
	s.next++
	return []byte(x.Reply)
}

// Recorder wraps a handler and keeps the exchanges it served, so a session
// against a live instrument can be replayed later with NewScript.
type Recorder struct {
	mu sync.Mutex
	h  Handler
	x  []Exchange
}

// NewRecorder records what h answers.
func NewRecorder(h Handler) *Recorder { return &Recorder{h: h} }

// Handler is the recording handler.
func (r *Recorder) Handler(req []byte) []byte {
	reply := r.h(req)
	r.mu.Lock()
	r.x = append(r.x, Exchange{Req: string(req), Reply: string(reply)})
	r.mu.Unlock()
	return reply
}

// Exchanges returns a copy of what was recorded.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.x...)
}
