package ptyline

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRoundTripThroughLink(t *testing.T) {
	link := filepath.Join(t.TempDir(), "cable")
	l, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := os.OpenFile(link, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// Raw mode: CR must arrive as CR, and nothing is echoed back.
	if _, err := client.Write([]byte("AS25.5\r")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_ = l.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := l.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := buf[:n]; !bytes.Equal(got, []byte("AS25.5\r")) {
		t.Fatalf("master read %q", got)
	}
	if _, err := l.Write([]byte("ok\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err = client.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := buf[:n]; !bytes.Equal(got, []byte("ok\r\n")) {
		t.Fatalf("client read %q (echo or translation?)", got)
	}
}

func TestCloseRemovesLinkAndUnblocksRead(t *testing.T) {
	link := filepath.Join(t.TempDir(), "cable")
	l, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read after close returned nil error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatalf("link still there: %v", err)
	}
}

// With a client holding the port open, a read deadline must fire and Close must
// unblock a pending Read (the master is non-blocking and in Go's poller).
func TestDeadlineAndCloseWithClientOpen(t *testing.T) {
	link := filepath.Join(t.TempDir(), "cable")
	l, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	client, err := os.OpenFile(link, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	_ = l.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := l.Read(make([]byte, 8)); !os.IsTimeout(err) {
		t.Fatalf("read with deadline: %v, want a timeout", err)
	}
	_ = l.SetReadDeadline(time.Time{})

	done := make(chan error, 1)
	go func() {
		_, err := l.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read after close returned nil error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock Read while a client held the port")
	}
}
