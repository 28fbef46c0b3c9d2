package control

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPeerFromTheKernel: the handler sees the connecting process's uid and
// gid as the kernel reports them, and a request line cannot claim a peer.
func TestPeerFromTheKernel(t *testing.T) {
	got := make(chan Peer, 1)
	s := listen(t, HandlerFunc(func(_ context.Context, req Request) (any, error) {
		got <- req.Peer
		return nil, nil
	}))
	if _, err := Do(ctxT(t), s.Path(), Request{Op: OpStatus}, time.Second); err != nil {
		t.Fatal(err)
	}
	p := <-got
	if !p.Known || p.UID != uint32(os.Getuid()) || p.GID != uint32(os.Getgid()) || p.PID != int32(os.Getpid()) {
		t.Fatalf("peer %+v, want uid %d gid %d pid %d", p, os.Getuid(), os.Getgid(), os.Getpid())
	}
	// A client that sends a peer of its own is refused before anything runs.
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(`{"op":"status","Peer":{"UID":0,"Known":true}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	var rep Reply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.OK || !strings.Contains(rep.Error, "unknown field") {
		t.Fatalf("a request claiming a peer: %+v", rep)
	}
	select {
	case p := <-got:
		t.Fatalf("the handler ran with %+v", p)
	default:
	}
}
