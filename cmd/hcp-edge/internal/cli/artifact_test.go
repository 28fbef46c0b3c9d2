package cli

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/atrest"
)

// TestArtifactOpenSealedNoKey: a sealed artifact, and the daemon has no
// key and none is given: the error says so and how to give one.
func TestArtifactOpenSealedNoKey(t *testing.T) {
	a := reply.Artifact{URI: "hcp://s/artifacts/x.csv", SessionID: "s", Name: "x.csv", Path: filepath.Join(t.TempDir(), "x.csv"),
		DataClass: "T4", Sealed: true}
	_, err := openSealed(a, "")
	if !errors.Is(err, atrest.ErrNoKey) || !strings.Contains(err.Error(), "classified T4") || !strings.Contains(err.Error(), "--key FILE") {
		t.Fatalf("openSealed: %v", err)
	}
	var buf bytes.Buffer
	if _, _, err := copyVerified(a, "-", &buf, ""); !errors.Is(err, atrest.ErrNoKey) || buf.Len() != 0 {
		t.Fatalf("copyVerified: %v (%d bytes written)", err, buf.Len())
	}
}
