package serialsim

import (
	"context"
	"path/filepath"
	"testing"

	"hcp-edge/firmware-sim/plant"
)

// TestStartAllWithRealPlant is a smoke test of StartAll against *plant.Plant:
// every reply passes a careful client's format check.
func TestStartAllWithRealPlant(t *testing.T) {
	p, err := plant.New(plant.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	set, err := StartAll(context.Background(), p, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := set.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, m := range []struct{ link, id string }{{LinkMFCAr, "A"}, {LinkMFCH2, "B"}, {LinkMFCH2S, "C"}} {
		c := dial(t, filepath.Join(dir, m.link))
		for _, cmd := range []string{"", "S 10", "HC", "C"} {
			c.send(m.id + cmd + "\r")
			if got := c.readTo('\r'); !frameRE.MatchString(got) || got[:1] != m.id {
				t.Fatalf("%s %q: %q", m.link, cmd, got)
			}
		}
	}
	g := dial(t, filepath.Join(dir, LinkGauge))
	g.send("PR1\r")
	if got := g.readTo('\n'); got != ack {
		t.Fatalf("gauge: %q", got)
	}
	g.send(enq)
	if got := g.readTo('\n'); !pressureRE.MatchString(got) {
		t.Fatalf("gauge data %q", got)
	}
	r := dial(t, filepath.Join(dir, LinkRaman))
	r.send("ACQ 100\r\n")
	if _, err := r.readBlock(); err != nil {
		t.Fatal(err)
	}
}
