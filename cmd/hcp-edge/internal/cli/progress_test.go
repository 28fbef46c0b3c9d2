package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/uuid"

	"hcp-edge/transport/wire"
)

func progressMsg(t *testing.T, seq uint64, stage string, pct float64) json.RawMessage {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"stage": stage, "percent": pct, "message": "step"})
	sid := uuid.New()
	env, err := wire.NewEnvelope(&sid, &wire.Event{EventType: "progress", Sequence: seq, Data: data}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := wire.Encode(env)
	return b
}

// TestProgressRendering: submit --watch's display is a live line rewritten
// in place on a terminal (a pty here) and plain lines otherwise.
func TestProgressRendering(t *testing.T) {
	var plain bytes.Buffer
	p := newProgress(&plain)
	p.show(progressMsg(t, 4, "heating", 42))
	p.show(progressMsg(t, 5, "heating", 57))
	p.clear()
	if got := plain.String(); strings.Contains(got, "\r") || strings.Count(got, "\n") != 2 || !strings.Contains(got, "#4 progress heating 42% step") {
		t.Fatalf("plain output %q", got)
	}

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	p = newProgress(tty)
	if !p.tty {
		t.Fatal("a pty is not seen as a terminal")
	}
	p.show(progressMsg(t, 4, "heating", 42))
	p.show(progressMsg(t, 5, "heating", 57))
	p.clear()
	_ = ptmx.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	var got []byte
	for !bytes.Contains(got, []byte("57%")) {
		n, err := ptmx.Read(buf)
		if err != nil {
			t.Fatalf("read pty: %v (got %q)", err, got)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Contains(got, []byte("\r\033[K[########")) || bytes.Contains(got, []byte("#4 progress")) {
		t.Fatalf("terminal output %q", got)
	}
}
