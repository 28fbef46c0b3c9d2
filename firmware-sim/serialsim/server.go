package serialsim

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"hcp-edge/firmware-sim/ptyline"
)

// firmware is one instrument's state machine. feed is always called with the
// server's lock held, as are the functions it schedules.
type firmware interface {
	// feed handles bytes the client wrote, received at now.
	feed(b []byte, now time.Time)
}

// scheduler runs time-driven firmware work (the end of an acquisition).
type scheduler interface {
	// schedule runs fn under the firmware lock after d, unless cancel is called
	// or the instrument stops first. fn must itself check that its work is
	// still wanted: cancel may race with the timer.
	schedule(d time.Duration, fn func()) (cancel func())
}

// server owns one pty line, the goroutine reading it and any timer goroutines
// the firmware schedules.
//
// The line's master side may block in read(2) without honouring deadlines or
// Close (creack/pty leaves the master fd in blocking mode), so stopping also
// writes one byte into the slave side to wake the reader.
type server struct {
	line      *ptyline.Line
	log       *slog.Logger
	stopAfter func() bool

	mu       sync.Mutex // serialises firmware calls; guards stopping
	fw       firmware
	stopping bool
	stopCh   chan struct{} // closed when stopping
	timers   sync.WaitGroup

	once     sync.Once
	closeErr error
	done     chan struct{} // closed when the reader returns
}

// serve opens a pty linked at link and serves the firmware built by mk on it
// until Close or until ctx is done.
func serve(ctx context.Context, link string, log *slog.Logger, mk func(w io.Writer, sch scheduler) firmware) (*server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	line, err := ptyline.Open(link)
	if err != nil {
		return nil, err
	}
	s := &server{line: line, log: log, stopCh: make(chan struct{}), done: make(chan struct{})}
	s.fw = mk(line, s)
	go s.run()
	s.stopAfter = context.AfterFunc(ctx, s.shutdown)
	return s, nil
}

func (s *server) run() {
	defer close(s.done)
	buf := make([]byte, 512)
	for {
		n, err := s.line.Read(buf)
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		if n > 0 {
			s.fw.feed(buf[:n], time.Now())
		}
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("serialsim: read failed, line stops", "link", s.line.Link(), "err", err)
			return
		}
	}
}

func (s *server) schedule(d time.Duration, fn func()) func() {
	cancel := make(chan struct{})
	var once sync.Once
	s.timers.Add(1)
	go func() {
		defer s.timers.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			s.mu.Lock()
			if !s.stopping {
				fn()
			}
			s.mu.Unlock()
		case <-cancel:
		case <-s.stopCh:
		}
	}()
	return func() { once.Do(func() { close(cancel) }) }
}

// shutdown stops intake and closes the line; it does not wait.
func (s *server) shutdown() {
	s.once.Do(func() {
		s.mu.Lock()
		s.stopping = true
		close(s.stopCh)
		s.mu.Unlock()
		if err := s.wake(); err != nil {
			s.log.Warn("serialsim: wake reader", "link", s.line.Link(), "err", err)
		}
		s.closeErr = s.line.Close()
	})
}

// wake writes one byte into the slave side so a blocked read of the master
// returns.
func (s *server) wake() error {
	f, err := os.OpenFile(s.line.Path(), os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte{0})
	return errors.Join(err, f.Close())
}

// Close stops intake, removes the link, closes the pty and waits for the
// reader and every timer goroutine.
func (s *server) Close() error {
	s.stopAfter()
	s.shutdown()
	<-s.done
	s.timers.Wait()
	return s.closeErr
}

// reply writes b to w. A failed write is dropped: the line is closing, or the
// client will see a timeout, as with a real instrument.
func reply(w io.Writer, b []byte) {
	_, _ = w.Write(b)
}
