package modelrouter_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"hcp-edge/device/devicetest"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/internal/syncbuf"
	"hcp-edge/session/analysis"
	mr "hcp-edge/session/modelrouter"
)

// mockLLMEnv names the mock-llm program when it is not where ci-deps puts
// it ($HOME/.cache/hcp-edge/npm/node_modules/.bin/mock-llm) nor on PATH.
const mockLLMEnv = "HCP_MOCK_LLM"

// mockLLMGuard bounds the wait for mock-llm to answer its health check: a
// guard against hangs, not a performance assertion.
const mockLLMGuard = 30 * time.Second

// mockLLMPath finds @dwmkerr/mock-llm (scripts/ci-deps.sh installs it), or
// stops the test as a missing peer.
func mockLLMPath(t *testing.T) string {
	t.Helper()
	devicetest.Hidden(t, "@dwmkerr/mock-llm 0.1.29 (npm)", "make ci-deps installs it with the machine's npm, or set "+mockLLMEnv)
	if p := os.Getenv(mockLLMEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			devicetest.MissingPeer(t, "@dwmkerr/mock-llm at "+mockLLMEnv+"="+p+": "+err.Error(), "make ci-deps installs it with the machine's npm")
		}
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "hcp-edge", "npm", "node_modules", ".bin", "mock-llm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("mock-llm"); err == nil {
		return p
	}
	devicetest.MissingPeer(t, "@dwmkerr/mock-llm 0.1.29 (npm)", "make ci-deps installs it with the machine's npm, or set "+mockLLMEnv)
	return ""
}

// startMockLLM runs mock-llm with testdata/mock-llm.yaml on a free loopback
// port until the test ends, and returns its base URL (…/v1).
func startMockLLM(t *testing.T) string {
	t.Helper()
	bin := mockLLMPath(t)
	if _, err := exec.LookPath("node"); err != nil {
		devicetest.MissingPeer(t, "node (mock-llm runs on it)", "apt-get install nodejs")
	}
	cfg, err := filepath.Abs(filepath.Join("testdata", "mock-llm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var out syncbuf.Buffer
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // owned by the cleanup below, which waits for it
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	guard := time.After(mockLLMGuard)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("mock-llm exited: %v\n%s", err, out.String())
		case <-guard:
			t.Fatalf("mock-llm did not answer /health within %v\n%s", mockLLMGuard, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("mock-llm at %s (%s)", base, bin)
	return base + "/v1"
}

// TestMockLLMPeer drives the production HTTP client (NewHTTPClient, the
// router's default) against @dwmkerr/mock-llm, an OpenAI-compatible server
// nobody here wrote: a good answer is taken; a 429 is retried and the
// next call of its sequence answers; a 500 every time falls back to the
// local answer; JSON that breaks the answer schema is a failed invocation
// that falls back to the next model. Health checks reach its /v1/models.
func TestMockLLMPeer(t *testing.T) {
	base := startMockLLM(t)
	remote := func(id, name string, tier int) mr.Model {
		return mr.Model{ID: id, Tier: tier, Kind: mr.OpenAI, Instances: []string{base}, Name: name, ContextWindow: 8192,
			CostIn: 0.001, CostOut: 0.002, Latency: time.Second, Cleared: mr.T4}
	}
	sp := spectrum(plant.Film{MoS2: 1}, 1000, 3, plant.SpectrumFaults{})
	ask := func(t *testing.T, models ...mr.Model) mr.Decision {
		t.Helper()
		// The real jitter and the real client; a short backoff base so the
		// 429's retry does not wait a second.
		r, err := mr.New(registry(models...), mr.Opts{BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Analyze(context.Background(), mr.Request{Task: "peer", Spectrum: sp, Material: analysis.MoS2, Hint: mr.HintBest})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	outcomes := func(d mr.Decision, model string) []mr.Outcome {
		var out []mr.Outcome
		for _, a := range d.Attempts {
			if a.Model == model {
				out = append(out, a.Outcome)
			}
		}
		return out
	}

	t.Run("good", func(t *testing.T) {
		d := ask(t, remote("peer-good", "good", 3))
		if d.Model != "peer-good" || d.Answer.LayerCount != 1 || d.Answer.Confidence != 0.93 || d.Fallback || d.Cost <= 0 {
			t.Fatalf("decision %+v", d)
		}
		if got := outcomes(d, "peer-good"); len(got) != 1 || got[0] != mr.OK {
			t.Fatalf("attempts %v", got)
		}
	})
	t.Run("429 then good", func(t *testing.T) {
		d := ask(t, remote("peer-busy", "busy", 3))
		if got := outcomes(d, "peer-busy"); len(got) != 2 || got[0] != mr.RateLimit || got[1] != mr.OK {
			t.Fatalf("attempts %v (%+v)", got, d.Attempts)
		}
		if d.Model != "peer-busy" || d.Fallback {
			t.Fatalf("decision %+v", d)
		}
	})
	t.Run("500 falls back", func(t *testing.T) {
		d := ask(t, remote("peer-broken", "broken", 3))
		got := outcomes(d, "peer-broken")
		if len(got) == 0 {
			t.Fatalf("never asked: %+v", d.Attempts)
		}
		for _, o := range got {
			if o != mr.ServerError {
				t.Fatalf("attempts %v", got)
			}
		}
		if d.Model == "peer-broken" || d.Tier > 2 || !d.Fallback || len(d.Warnings) == 0 || d.Answer.LayerCount != 1 {
			t.Fatalf("decision %+v", d)
		}
	})
	t.Run("schema-breaking falls back", func(t *testing.T) {
		// Both tier 3; best asks the dearer first: the schema breaker.
		dear := remote("peer-schema", "schema", 3)
		dear.CostIn, dear.CostOut = 0.01, 0.02
		d := ask(t, dear, remote("peer-good", "good", 3))
		if got := outcomes(d, "peer-schema"); len(got) != 1 || got[0] != mr.BadAnswer {
			t.Fatalf("attempts %v", got)
		}
		if d.Model != "peer-good" || !d.Fallback || d.Answer.Confidence > 1 {
			t.Fatalf("decision %+v", d)
		}
	})
	t.Run("health", func(t *testing.T) {
		r, err := mr.New(registry(remote("peer-good", "good", 3)), mr.Opts{})
		if err != nil {
			t.Fatal(err)
		}
		h := r.CheckHealth(context.Background())
		if len(h) != 1 || !h[0].OK {
			t.Fatalf("health %+v", h)
		}
	})
}
