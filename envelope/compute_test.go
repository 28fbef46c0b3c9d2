package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/device/catalog"
)

var analyzeRef = ToolRef{Name: catalog.ToolAnalyze, Version: catalog.BuiltinVersion}

const (
	goodAnalyzeInput = `{"task": "s-1", "spectrum": {"shift": [380, 400, 410], "counts": [1, 2, 3], "integration_ms": 1000}, "material": "MoS2"}`
	goodAnalyzeOut   = `{"routed": false, "model": "local-fit", "tier": 1, "layer_count": 1, "confidence": 0.9, "fallback": false, "cost": 0,
		"fit": {"found": true, "layer_count": 1, "confidence": 0.9}}`
)

// echoHandler answers out and counts its calls.
func echoHandler(out string, calls *atomic.Int32) ComputeTool {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		if !json.Valid(input) {
			return nil, errors.New("handler given invalid JSON")
		}
		return json.RawMessage(out), nil
	}
}

// TestComputeTool: a compute tool runs the registered handler through the
// pipeline's lookup, authentication, input schema, permission, rate limit
// and output schema; each refusal is audited without an Action and
// counted by its rule; a handler's failure and a broken output are
// failures; nothing ever reaches an instrument.
func TestComputeTool(t *testing.T) {
	ctx := context.Background()
	f := newInvokeFixture(t, nil, nil)
	var calls atomic.Int32

	// No handler registered: a typed failure, before anything else.
	_, err := f.iv.Invoke(ctx, "ok", analyzeRef, json.RawMessage(goodAnalyzeInput))
	var ie *InvokeError
	if !errors.Is(err, ErrNoHandler) || !errors.As(err, &ie) || ie.Stage != StageLookup || ie.Refused() {
		t.Fatalf("no handler: %v", err)
	}

	if err := f.iv.SetCompute(analyzeRef, echoHandler(goodAnalyzeOut, &calls)); err != nil {
		t.Fatal(err)
	}
	out, err := f.iv.Invoke(ctx, "ok", analyzeRef, json.RawMessage(goodAnalyzeInput))
	if err != nil || calls.Load() != 1 {
		t.Fatalf("invoke: %v (%d calls)", err, calls.Load())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil || got["model"] != "local-fit" {
		t.Fatalf("output %s: %v", out, err)
	}

	tests := []struct {
		name, token, input string
		stage              string
		rule               Rule
		is                 error
	}{
		{"bad token", "forged", goodAnalyzeInput, StagePermission, RuleUnauthorized, ErrUnauthorized},
		{"schema", "ok", `{"spectrum": {"shift": [1], "counts": [1], "integration_ms": 1}, "confidence_threshold": 2}`,
			StageInput, RuleInvalidInput, catalog.ErrInvalidInput},
		{"extra field", "ok", `{"spectrum": {"shift": [1], "counts": [1], "integration_ms": 1}, "heater": true}`,
			StageInput, RuleInvalidInput, catalog.ErrInvalidInput},
		{"no rig.measure", "reader", goodAnalyzeInput, StagePermission, RulePermission, ErrUnauthorized},
	}
	for _, tc := range tests {
		before := f.audit.count()
		_, err := f.iv.Invoke(ctx, tc.token, analyzeRef, json.RawMessage(tc.input))
		if !errors.Is(err, tc.is) || !errors.As(err, &ie) || ie.Stage != tc.stage || !ie.Refused() {
			t.Errorf("%s: %v, want %v at %s", tc.name, err, tc.is, tc.stage)
			continue
		}
		if f.audit.count() != before+1 {
			t.Errorf("%s: refusal not audited", tc.name)
		} else if e := f.audit.last(); e.Decision != DecisionRefused || e.Action != nil {
			t.Errorf("%s: audited %+v, want a refusal without an action", tc.name, e)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("a refused call reached the handler (%d calls)", calls.Load())
	}
	st := f.iv.Stat(analyzeRef)
	if st.Calls != 6 || st.Succeeded != 1 || st.Failed != 1 || st.Refused != 4 || st.RefusedBy[RuleInvalidInput] != 2 ||
		st.RefusedBy[RulePermission] != 1 || st.RefusedBy[RuleUnauthorized] != 1 || st.TowardSafe != 0 {
		t.Fatalf("stats %+v", st)
	}

	// The handler fails; the handler refuses the input; the output breaks
	// the schema; the output is not JSON.
	fail := errors.New("model router down")
	steps := []struct {
		name  string
		h     ComputeTool
		stage string
		is    error
	}{
		{"handler error", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, fail }, StageExecute, fail},
		{"handler refuses the input", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &catalog.ValidationError{Name: catalog.ToolAnalyze, Which: "input", Err: errors.New("shift and counts differ in length")}
		}, StageInput, catalog.ErrInvalidInput},
		{"output schema", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"routed": false, "model": "x", "tier": 7}`), nil
		}, StageOutput, catalog.ErrInvalidOutput},
		{"output not JSON", func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{`), nil }, StageOutput, nil},
		{"panic", func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("boom") }, StageExecute, ErrHandlerPanic},
	}
	for _, s := range steps {
		if err := f.iv.SetCompute(analyzeRef, s.h); err != nil {
			t.Fatal(err)
		}
		out, err := f.iv.Invoke(ctx, "ok", analyzeRef, json.RawMessage(goodAnalyzeInput))
		if err == nil || out != nil || !errors.As(err, &ie) || ie.Stage != s.stage || (s.is != nil && !errors.Is(err, s.is)) {
			t.Errorf("%s: %s, %v; want stage %s, %v", s.name, out, err, s.stage, s.is)
		}
	}
	st = f.iv.Stat(analyzeRef)
	if st.Calls != 11 || st.Failed != 5 || st.Refused != 5 || st.RefusedBy[RuleInvalidInput] != 3 {
		t.Fatalf("stats after failures %+v", st)
	}
	if n := f.p.writeCount(); n != 0 || len(f.p.halts) != 0 {
		t.Fatalf("a compute tool reached an instrument: %d writes, halts %v", n, f.p.halts)
	}
	for _, e := range f.audit.entries {
		if e.Action != nil {
			t.Fatalf("a compute call audited an action: %+v", e)
		}
	}
}

// TestComputeTimeout: the handler is bounded by the tool's timeout; one
// that ignores its context is abandoned, and the call fails.
func TestComputeTimeout(t *testing.T) {
	reg := catalog.NewRegistry()
	tl := computeTool("slow.compute", 50*time.Millisecond)
	if err := reg.Register(tl); err != nil {
		t.Fatal(err)
	}
	f := newInvokeFixture(t, reg, nil)
	r := ToolRef{Name: tl.Name, Version: tl.Version}
	release := make(chan struct{})
	defer close(release)
	if err := f.iv.SetCompute(r, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		<-release // ignores ctx
		return json.RawMessage(`{}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := f.iv.Invoke(context.Background(), "ok", r, nil)
	var ie *InvokeError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ie) || ie.Stage != StageExecute || time.Since(start) > 5*time.Second {
		t.Fatalf("slow handler: %v after %v", err, time.Since(start))
	}
}

// TestComputeNoAction: a compute tool cannot produce an Action. Its
// handler's type carries none (JSON in, JSON out); no handler can stand
// in for an actuator or measurement tool; ToolFor maps no Action to a
// compute tool; and a compute tool that shares an actuator's name at
// another version still runs only its handler.
func TestComputeNoAction(t *testing.T) {
	ht := reflect.TypeFor[ComputeTool]()
	raw := reflect.TypeFor[json.RawMessage]()
	if ht.NumIn() != 2 || ht.In(1) != raw || ht.NumOut() != 2 || ht.Out(0) != raw || ht.Out(1) != reflect.TypeFor[error]() {
		t.Fatalf("ComputeTool is %v: a handler must take and return JSON only", ht)
	}

	reg, err := catalog.Builtin(SimRigSpec().Lines())
	if err != nil {
		t.Fatal(err)
	}
	shadow := computeTool(catalog.ToolSetHeater, time.Second)
	shadow.Version = "2.0.0"
	if err := reg.Register(shadow); err != nil {
		t.Fatal(err)
	}
	f := newInvokeFixture(t, reg, nil)
	var calls atomic.Int32
	for _, name := range []string{catalog.ToolSetHeater, catalog.ToolAcquire, catalog.ToolVent, catalog.ToolSnapshot} {
		if err := f.iv.SetCompute(ref(name), echoHandler(`{}`, &calls)); !errors.Is(err, ErrNoHandler) {
			t.Errorf("SetCompute(%s): %v, want ErrNoHandler", name, err)
		}
	}
	if err := f.iv.SetCompute(ToolRef{Name: "no.such"}, echoHandler(`{}`, &calls)); err == nil {
		t.Error("SetCompute without a version or a tool accepted")
	}
	for _, a := range []Action{HeaterAction(true), AcquireAction(time.Second), SetpointAction(500), SwitchAction("pump", true)} {
		if r, _, err := f.iv.ToolFor(a); err == nil {
			if tl, _ := reg.Describe(r.Name, r.Version); tl.Compute() {
				t.Errorf("ToolFor(%v) = %s, a compute tool", a, r)
			}
		}
	}
	// furnace.set_heater@2.0.0 is a compute tool: its handler runs, the
	// heater does not move.
	sr := ToolRef{Name: shadow.Name, Version: shadow.Version}
	if err := f.iv.SetCompute(sr, echoHandler(`{}`, &calls)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.iv.Invoke(context.Background(), "ok", sr, json.RawMessage(`{}`)); err != nil || calls.Load() != 1 {
		t.Fatalf("shadow: %v, %d calls", err, calls.Load())
	}
	if n := f.p.writeCount(); n != 0 {
		t.Fatalf("a compute tool wrote %d times", n)
	}
}

// computeTool is a minimal compute tool of that name, open input and
// output objects.
func computeTool(name string, timeout time.Duration) catalog.Tool {
	return catalog.Tool{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", len(name)), Name: name, Version: "1.0.0",
		Description: "test compute", Category: catalog.CategoryCompute, Capabilities: []string{"test"},
		InputSchema: json.RawMessage(`{"type": "object"}`), OutputSchema: json.RawMessage(`{"type": "object"}`),
		Safety:      catalog.Safety{Permission: catalog.PermissionRead, RiskLevel: catalog.R1},
		Performance: catalog.Performance{Timeout: timeout}}
}
