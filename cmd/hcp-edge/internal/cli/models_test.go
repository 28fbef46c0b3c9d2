package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hcp-edge/hcp-edge/configs"
	"github.com/hcp-edge/hcp-edge/session/modelrouter/modeltest"
)

func TestModelsCheck(t *testing.T) {
	t.Setenv("HCP_STATE_DIR", "")
	srv := modeltest.New()
	defer srv.Close()
	cfg := string(configs.SimYAML) + `
models:
  - {id: local-fit, tier: 1, kind: local, model: fit, data_class_cleared: T4, default: true}
  - id: remote
    tier: 3
    kind: openai
    instances: ["` + srv.Base() + `"]
    model: m
    context_window: 4096
    typical_latency: 100ms
    data_class_cleared: T2
`
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Models(context.Background(), []string{"--json", "--check", "--config", path}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	var rep ModelsReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Models) != 2 || len(rep.Health) != 1 || !rep.Health[0].OK || rep.Health[0].Circuit != "closed" {
		t.Fatalf("report %+v", rep)
	}
	srv.Close()
	out.Reset()
	if code := Models(context.Background(), []string{"--check", "--config", path}, &out, &errb); code != ExitFailure ||
		!strings.Contains(out.String(), "unreachable") {
		t.Fatalf("exit %d with the instance down:\n%s", code, out.String())
	}
}
