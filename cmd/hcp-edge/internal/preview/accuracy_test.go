package preview

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/device/catalog"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/internal/hilbench"
	"github.com/hcp-edge/hcp-edge/session/executor"
	"github.com/hcp-edge/hcp-edge/session/lifecycle"
)

// benchAuthorizer grants every action and tool of the bench's session.
type benchAuthorizer struct{ hilbench.AllowAll }

func (benchAuthorizer) AuthorizeTool(context.Context, string, catalog.Tool) (envelope.ToolGrant, error) {
	return envelope.ToolGrant{SessionID: "accuracy", Permissions: []catalog.Permission{catalog.PermissionRead,
		catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}}, nil
}

// nopSink discards every event of the run on rig-sim.
type nopSink struct{}

func (nopSink) Emit(context.Context, lifecycle.EventType, any) error { return nil }

// TestPreviewAccuracy compares the preview of the seed synthesis with an
// actual run on rig-sim (internal/hilbench: firmware-sim over its sockets,
// the real drivers, the monitor, the interlock with the same envelope, the
// tool pipeline), with the same inputs: the predicted duration and layers
// must be within 5 % of the run's.
func TestPreviewAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole synthesis on rig-sim")
	}
	cfg := simConfig(t)
	spec, err := rigconfig.Spec(cfg.Rig)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(cfg.Envelope, spec)
	if err != nil {
		t.Fatal(err)
	}
	x := builtin(t, executor.CVDName)
	task := executor.Task{SessionID: "accuracy", Inputs: json.RawMessage(seedInputs)}
	pred, err := Run(context.Background(), x, task, Opts{Config: cfg, Envelope: env})
	if err != nil || !pred.Completed {
		t.Fatalf("preview: %v %+v", err, pred.Failure)
	}

	rates, _ := executor.NewScaledClock(accuracyScale)
	b := hilbench.New(t, hilbench.Opts{TimeScale: accuracyScale, Authorizer: benchAuthorizer{hilbench.AllowAll{Session: "accuracy"}},
		Envelope: env, Invoker: &envelope.InvokerOpts{RateClock: rates.Now}, Arm: "accuracy-operator"})
	if err := executor.RegisterAnalysis(b.Invoker, nil); err != nil { // the preview's analysis: the tier-1 fit
		t.Fatal(err)
	}
	rec, err := x.Plan(task)
	if err != nil {
		t.Fatal(err)
	}
	clock, _ := executor.NewScaledClock(accuracyScale)
	xenv := &executor.Env{Rig: executor.ToolRig(b.Invoker, b.Monitor), Token: "accuracy", Clock: clock, Sink: nopSink{},
		Checkpoints: discard{}, ArtifactDir: t.TempDir(), SessionID: task.SessionID}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	start := clock.Now()
	if _, err := executor.Execute(ctx, rec, xenv, 0); err != nil {
		t.Fatalf("run on rig-sim: %v", err)
	}
	actual := clock.Now().Sub(start)
	layers := b.Plant.Layers()

	dDur := math.Abs(float64(pred.ProcessTime)-float64(actual)) / float64(actual)
	dLay := math.Abs(pred.Product.Layers-layers) / layers
	t.Logf("duration: predicted %v, rig-sim %v (%.2f %%); layers: predicted %.3f, rig-sim %.3f (%.2f %%); preview %.0f× real time",
		pred.ProcessTime, actual.Round(time.Second), 100*dDur, pred.Product.Layers, layers, 100*dLay, pred.SpeedUp)
	if dDur > 0.05 || dLay > 0.05 {
		t.Errorf("the prediction is more than 5 %% off the run")
	}
}
