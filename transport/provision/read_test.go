package provision

import (
	"context"
	"io"
	"testing"
)

// flakyRunner answers export_definitions with its outputs in turn.
type flakyRunner struct {
	outs  []string
	calls int
}

func (f *flakyRunner) Run(_ context.Context, _ io.Reader, args ...string) ([]byte, error) {
	out := f.outs[min(f.calls, len(f.outs)-1)]
	f.calls++
	return []byte(out), nil
}

// TestReadAsksAgainForAMalformedExport: an export that is not a JSON
// document is asked for again; a good one after it is read; one that stays
// malformed fails after readAttempts exports.
func TestReadAsksAgainForAMalformedExport(t *testing.T) {
	good := `{"vhosts":[{"name":"hcp"}],"users":[],"permissions":[],"topic_permissions":[]}`
	r := &flakyRunner{outs: []string{`{"vhosts":[{:}]}`, good}}
	st, err := Read(context.Background(), r)
	if err != nil || !st.VHosts["hcp"] || r.calls != 2 {
		t.Fatalf("Read = %+v, %v after %d exports; want vhost hcp after 2", st, err, r.calls)
	}
	r = &flakyRunner{outs: []string{`{:`}}
	if _, err := Read(context.Background(), r); err == nil || r.calls != readAttempts {
		t.Fatalf("Read of a malformed export: %v after %d exports; want an error after %d", err, r.calls, readAttempts)
	}
}
