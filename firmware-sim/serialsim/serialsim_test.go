package serialsim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStartAllServesEveryInstrument(t *testing.T) {
	p := newFakePlant()
	dir := t.TempDir()
	set, err := StartAllOpts(context.Background(), p, dir, Opts{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ link, send, want string }{
		{LinkMFCAr, "A\r", "A +014.70 +025.00 +000.00 +000.00 +000.00 Ar\r"},
		{LinkMFCH2, "B\r", "B +014.70 +025.00 +000.00 +000.00 +000.00 H2\r"},
		{LinkMFCH2S, "C\r", "C +014.70 +025.00 +000.00 +000.00 +000.00 H2S\r"},
		{LinkMFCH2S, "CVE\r", "C 10v05.0-R24\r"},
		{LinkGauge, "TID\r", ack},
		{LinkRaman, "*IDN?\r\n", RamanIDN + "\r\n"},
	} {
		c := dial(t, filepath.Join(dir, m.link))
		c.send(m.send)
		if got := c.readTo(m.want[len(m.want)-1]); got != m.want {
			t.Fatalf("%s: %q, want %q", m.link, got, m.want)
		}
	}
	// Close returns although clients still hold the ptys open.
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{LinkMFCAr, LinkMFCH2, LinkMFCH2S, LinkGauge, LinkRaman} {
		if _, err := os.Lstat(filepath.Join(dir, l)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still there: %v", l, err)
		}
	}
	if err := set.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestContextStopsInstruments(t *testing.T) {
	p := newFakePlant()
	p.set(func(p *fakePlant) { p.scale = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	r, err := NewRaman(ctx, p, RamanOpts{Link: linkIn(t, "raman")})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, r.Link())
	c.send("ACQ 60000\r\n") // a timer goroutine is pending
	time.Sleep(20 * time.Millisecond)
	cancel()
	done := make(chan error, 1)
	go func() { done <- r.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung after the context ended")
	}
	c.expectNothing(50 * time.Millisecond)
}

func TestStartAllRejectsNilPlant(t *testing.T) {
	if _, err := StartAll(context.Background(), nil, t.TempDir()); err == nil {
		t.Fatal("StartAll with a nil plant succeeded")
	}
	if _, err := StartAllOpts(context.Background(), nil, t.TempDir(), DefaultOpts()); err == nil {
		t.Fatal("StartAllOpts with a nil plant succeeded")
	}
}

func TestStartAllBadDirCleansUp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	if set, err := StartAllOpts(context.Background(), newFakePlant(), dir, Opts{}); err == nil {
		set.Close()
		t.Fatal("StartAllOpts in a missing directory succeeded")
	}
}
