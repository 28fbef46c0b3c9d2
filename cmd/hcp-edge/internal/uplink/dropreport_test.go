package uplink

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"hcp-edge/session/engine"
	"hcp-edge/transport/outbox"
)

// fakeWarner records Warn calls; sessions in closed refuse them.
type fakeWarner struct {
	mu     sync.Mutex
	calls  []string
	closed map[string]bool
}

func (f *fakeWarner) Warn(_ context.Context, id, code, msg string, d map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed[id] {
		return fmt.Errorf("%w: %s closed", engine.ErrState, id)
	}
	f.calls = append(f.calls, fmt.Sprintf("%s %s %v", id, code, d["dropped"]))
	return nil
}

// TestDropReporter: telemetry past the outbox's bound is dropped oldest
// first and counted per session; the reporter tells each live session in a
// warning (once: the counts are taken), logs a closed session's count and
// a session-less one.
func TestDropReporter(t *testing.T) {
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{TelemetryBound: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	add := func(sid string, n int) {
		for i := 0; i < n; i++ {
			if _, err := ob.Append(outbox.Message{Class: outbox.Telemetry, Exchange: "hcp.events", RoutingKey: "c." + sid + ".event",
				MessageID: fmt.Sprintf("%s-%d", sid, i), CorrelationID: sid, Body: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("s1", 4) // 2 of s1 dropped
	add("s2", 3) // 2 more of s1 and 1 of s2 dropped
	add("", 3)   // 2 of s2 and 1 of "" dropped
	var logs bytes.Buffer
	w := &fakeWarner{closed: map[string]bool{"s2": true}}
	r := &dropReporter{ob: ob, w: w, log: slog.New(slog.NewTextHandler(&logs, nil))}
	r.report(context.Background())
	if fmt.Sprint(w.calls) != "[s1 telemetry_dropped 4]" {
		t.Fatalf("warnings %v", w.calls)
	}
	for _, want := range []string{"session=s2 dropped=3", "telemetry without a session dropped from the outbox\" dropped=1"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, logs.String())
		}
	}
	r.report(context.Background())
	if len(w.calls) != 1 {
		t.Fatalf("counts reported twice: %v", w.calls)
	}
}
