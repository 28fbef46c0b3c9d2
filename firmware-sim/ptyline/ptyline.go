// Package ptyline gives a simulated instrument its serial "cable": a
// pseudo-terminal whose master side the simulated firmware reads and writes, and
// whose slave side a client opens like any serial port, through a stable symlink
// (for example /tmp/hcp-rig-sim/mfc-ar -> /dev/pts/7).
//
// # Concepts
//
// The slave is put in raw mode (no echo, no CR/LF translation, no signals) and
// kept open by the simulator for the line's whole life, so a client may open and
// close it any number of times without the master seeing a hang-up.
//
// # Caveats
//
// A pty ignores baud rate and parity; framing timings (Modbus RTU silences)
// are therefore only approximated on a pty.
package ptyline

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Line is one pseudo-terminal serving one simulated serial cable.
type Line struct {
	master *os.File
	slave  *os.File
	link   string
}

// Open creates a pty in raw mode and, when link is not empty, a symlink at link
// pointing to its slave device (replacing a stale link or file of that name).
func Open(link string) (*Line, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("ptyline: open pty: %w", err)
	}
	// creack/pty calls Fd() on the master, which puts it in blocking mode and
	// takes it out of Go's poller: deadlines would silently never fire and Close
	// would not unblock a Read while a client holds the port open. Re-wrap a
	// non-blocking duplicate so both work.
	if master, err = pollable(master); err != nil {
		_ = slave.Close()
		return nil, fmt.Errorf("ptyline: %w", err)
	}
	l := &Line{master: master, slave: slave, link: link}
	if err := makeRaw(int(slave.Fd())); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("ptyline: raw mode on %s: %w", slave.Name(), err)
	}
	if link != "" {
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.closeFiles()
			return nil, fmt.Errorf("ptyline: replace %s: %w", link, err)
		}
		if err := os.Symlink(slave.Name(), link); err != nil {
			l.closeFiles()
			return nil, fmt.Errorf("ptyline: link %s: %w", link, err)
		}
	}
	return l, nil
}

// pollable returns a non-blocking duplicate of f registered with Go's poller,
// and closes f.
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(f.Fd()))
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("non-blocking pty master: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// makeRaw is cfmakeraw(3) on fd.
func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

// Path is the slave device path, e.g. /dev/pts/7.
func (l *Line) Path() string { return l.slave.Name() }

// Link is the symlink given to Open ("" when none).
func (l *Line) Link() string { return l.link }

// Read reads what the client wrote, from the master side.
func (l *Line) Read(p []byte) (int, error) { return l.master.Read(p) }

// Write sends bytes to the client, through the master side.
func (l *Line) Write(p []byte) (int, error) { return l.master.Write(p) }

// SetReadDeadline bounds the next Read; Close also unblocks a pending Read.
func (l *Line) SetReadDeadline(t time.Time) error { return l.master.SetReadDeadline(t) }

// Close removes the link and closes both sides; a blocked Read returns an error.
func (l *Line) Close() error {
	if l.link != "" {
		if target, err := os.Readlink(l.link); err == nil && target == l.slave.Name() {
			_ = os.Remove(l.link)
		}
	}
	return l.closeFiles()
}

func (l *Line) closeFiles() error {
	return errors.Join(l.master.Close(), l.slave.Close())
}
