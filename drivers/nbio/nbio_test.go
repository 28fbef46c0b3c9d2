package nbio_test

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"hcp-edge/drivers/nbio"
)

// pair returns both ends of a loopback TCP connection; the first as an FD.
func pair(t *testing.T) (*net.TCPConn, *nbio.FD, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	fd, err := nbio.New(c.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	return c.(*net.TCPConn), fd, s
}

func TestReadWrite(t *testing.T) {
	_, fd, peer := pair(t)
	big := make([]byte, 4<<20) // more than the socket buffers: Write must wait and go on
	for i := range big {
		big[i] = byte(i)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		got <- b
	}()
	if n, err := fd.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(big))
	}
	if b := <-got; string(b) != string(big) {
		t.Fatal("the peer got other bytes")
	}
	go func() { peer.Write([]byte("reply")) }()
	buf := make([]byte, 16)
	n, err := fd.Read(buf)
	if err != nil || string(buf[:n]) != "reply"[:n] || n == 0 {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if n, err := fd.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

func TestReadHonoursDeadline(t *testing.T) {
	c, fd, _ := pair(t)
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	t0 := time.Now()
	_, err := fd.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if d := time.Since(t0); d < 25*time.Millisecond {
		t.Fatalf("Read returned after %v, before its deadline", d)
	}
	// A deadline in the past interrupts a read in progress (how the drivers
	// cancel one).
	c.SetReadDeadline(time.Time{})
	done := make(chan error)
	go func() { _, err := fd.Read(make([]byte, 8)); done <- err }()
	time.Sleep(20 * time.Millisecond)
	c.SetReadDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("interrupted Read: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline in the past did not interrupt the read")
	}
}

func TestEOFAndClose(t *testing.T) {
	c, fd, peer := pair(t)
	peer.Close()
	if _, err := fd.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("Read after the peer closed: %v, want io.EOF", err)
	}
	c.Close()
	if _, err := fd.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
	}
	if _, err := fd.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
}

// TestFile: an *os.File opened non-blocking (how serialline opens a tty)
// waits in the netpoller with its deadlines, here on a pipe.
func TestFile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rfd, err := nbio.New(r)
	if err != nil {
		t.Fatal(err)
	}
	wfd, err := nbio.New(w)
	if err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := rfd.Read(make([]byte, 4)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read of an empty pipe: %v, want os.ErrDeadlineExceeded", err)
	}
	r.SetReadDeadline(time.Time{})
	if _, err := wfd.Write([]byte("PR1\r")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	n, err := rfd.Read(b)
	if err != nil || string(b[:n]) != "PR1\r" {
		t.Fatalf("Read = %q, %v", b[:n], err)
	}
}

// BenchmarkRoundTrip is one 12-byte request and its reply over loopback
// TCP, through an FD and through net.Conn.
func BenchmarkRoundTrip(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 64)
		for {
			n, err := s.Read(buf)
			if err != nil {
				return
			}
			s.Write(buf[:n])
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	fd, _ := nbio.New(c.(*net.TCPConn))
	req, buf := make([]byte, 12), make([]byte, 64)
	b.Run("nbio", func(b *testing.B) {
		for b.Loop() {
			fd.Write(req)
			fd.Read(buf)
		}
	})
	b.Run("net.Conn", func(b *testing.B) {
		for b.Loop() {
			c.Write(req)
			c.Read(buf)
		}
	})
}
