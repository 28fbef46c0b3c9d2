package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// withdrawingWriter takes the chunks of a fetch; after the chunk numbered
// at, it withdraws the release through the CLI before it returns, so the
// fetch's next artifact_request is asked after the withdrawal has
// committed (no timing involved).
type withdrawingWriter struct {
	t      *testing.T
	b      *brokerEnv
	accID  string
	at     int
	writes int
	buf    bytes.Buffer
	out    string // the CLI's answer
}

func (w *withdrawingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.buf.Write(p)
	if w.writes == w.at {
		w.out = w.b.mustCLI("access", "withdraw", w.accID, "--operator", "olga", "--reason", "released to the wrong project").stdout
	}
	return len(p), nil
}

// TestWithdrawStopsFetchThroughBroker: a T4 leak-check through RabbitMQ's
// TLS listener (t4Broker); its results are released (access approve), and
// the caller fetches the sealed plot in 256-byte chunks. After the second
// chunk has arrived, an operator withdraws the release (access withdraw):
// the fetch stops at its very next chunk with request_refused
// access_denied, with no byte of it; a new fetch is refused from its first
// chunk; the refusal is audited after the withdrawal. The state file,
// through whose outbox the chunks and the released final message went,
// holds none of the plot and none of the outputs' values in the clear.
func TestWithdrawStopsFetchThroughBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end through the real binary and broker")
	}
	b, c := t4Broker(t) // skips loudly without a broker, fails under HCP_REQUIRE_PEERS=1
	b.arm()
	task, sid, accID := heldT4LeakCheck(t, b, c)
	b.mustCLI("access", "approve", accID, "--operator", "olga", "--for", "1h")
	tc, err := final(t, b, task).TaskCompleted()
	if err != nil || len(tc.Artifacts) == 0 {
		t.Fatalf("after approval: %+v %v", tc, err)
	}
	a := tc.Artifacts[0]
	const chunk = 256
	if a.SizeBytes < 8*chunk {
		t.Fatalf("%s is %d bytes: too small for a fetch of many %d-byte chunks", a.URI, a.SizeBytes, chunk)
	}

	cctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	w := &withdrawingWriter{t: t, b: b, accID: accID, at: 2}
	got, err := c.FetchArtifactWith(cctx, a.URI, w, caller.FetchOpts{ChunkSize: chunk, Checksum: a.Checksum})
	wantRefused(t, err, wire.ReasonAccessDenied)
	if !strings.Contains(w.out, "withdrawn by olga") {
		t.Fatalf("withdraw: %q", w.out)
	}
	if w.writes != 2 || got.Chunks != 2 || int64(w.buf.Len()) != 2*chunk || got.SizeBytes != 2*chunk {
		t.Fatalf("the fetch went on after the withdrawal: %d writes, %d bytes, %+v (artifact %d bytes)", w.writes, w.buf.Len(), got, a.SizeBytes)
	}
	if !bytes.Contains(w.buf.Bytes(), []byte("<svg")) {
		t.Fatalf("the first chunks are not the plot: %.40q", w.buf.Bytes())
	}
	t.Logf("fetch of %s (%d bytes) stopped at chunk 3 of %d: %v", a.URI, a.SizeBytes, (a.SizeBytes+chunk-1)/chunk, err)

	// From the start again: refused at the first chunk.
	var again bytes.Buffer
	_, err = c.FetchArtifactWith(cctx, a.URI, &again, caller.FetchOpts{ChunkSize: chunk})
	wantRefused(t, err, wire.ReasonAccessDenied)
	if again.Len() != 0 {
		t.Fatalf("a refused fetch wrote %d bytes", again.Len())
	}

	// The chunks went through the outbox in the state file, and the final
	// message was held there: sealed, none of the plot or of the outputs'
	// values is in the file.
	state := filepath.Join(b.dir, rigconfig.StateFile)
	disk, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(disk, []byte("<svg")) || bytes.Contains(disk, w.buf.Bytes()[:64]) {
		t.Fatal("the state file holds the plot's chunks in the clear")
	}
	vals := outputValues(t, tc.Outputs)
	if len(vals) == 0 {
		t.Fatalf("no measured value in the outputs %s to look for", tc.Outputs)
	}
	t.Logf("none of the plot's bytes, looking for %d output values in the state file", len(vals))
	if got := found(t, state, vals); len(got) != 0 {
		t.Fatalf("the state file holds %d of the T4 session's %d output values in the clear: %v", len(got), len(vals), got)
	}

	// The audit: the withdrawal, then the refused chunk, in that order.
	rep := b.mustCLI("audit", "replay", sid, "--json", "--operator", "olga").stdout
	wd, refused := strings.Index(rep, "access_withdrawn"), strings.LastIndex(rep, "access_denied")
	if wd < 0 || refused < wd || !strings.Contains(rep[wd:], "artifact_fetch") {
		t.Fatalf("audit replay: withdrawal at %d, refused fetch at %d:\n%s", wd, refused, rep)
	}
}
