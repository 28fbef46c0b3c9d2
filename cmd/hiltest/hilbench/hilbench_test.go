package hilbench

import (
	"context"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
)

// TestOnlyTestsImport: no non-test Go file of the module imports this
// package or any other test-support package (a shipped package holding one
// would link the simulator, fakes or test servers into the agent). Every
// non-test Go file is parsed, imports only.
func TestOnlyTestsImport(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	const mod = "hcp-edge/"
	support := map[string]bool{}
	for _, p := range []string{"cmd/hiltest/hilbench", "cmd/hcp-edge/internal/agent/notifytest",
		"transport/amqp/amqptest", "device/devicetest", "drivers/modbus/modbustest", "drivers/serialline/serialtest",
		"session/modelrouter/modeltest", "cmd/hiltest/simrig"} {
		support[mod+p] = true
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		for sp := range support { // test support may build on test support
			if strings.HasPrefix(p, filepath.Join(root, strings.TrimPrefix(sp, mod))+string(filepath.Separator)) {
				return nil
			}
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); support[path] {
				t.Errorf("%s imports %s, which is test support", fset.Position(imp.Pos()), path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("parsed %d non-test files: the walk missed the module", files)
	}
}

// TestBench: a bench starts, reads every instrument, arms, and its
// interlock's arming is in the audit record; Envelope loads the testdata
// envelope.
func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the simulated rig")
	}
	var chained atomic.Int64
	b := New(t, Opts{TimeScale: 300, Authorizer: AllowAll{Session: "bench"}, Arm: "bench-operator",
		Audit: func(record envelope.Auditor) envelope.Auditor {
			return auditFunc(func(e envelope.Entry) error { chained.Add(1); return record.Record(t.Context(), e) })
		}})
	if !b.Plant.Relay() {
		t.Fatal("armed, but the plant's relay is off")
	}
	armed := b.Audit.Entries(envelope.DecisionArmed)
	if len(armed) != 1 || armed[0].Operator != "bench-operator" {
		t.Fatalf("armed entries %+v", armed)
	}
	if int(chained.Load()) != b.Audit.Len() || b.Audit.Count(envelope.DecisionArmed) != 1 || b.Audit.Tripped(envelope.TripCommsLoss) {
		t.Fatalf("chain saw %d, record holds %+v", chained.Load(), b.Audit.All())
	}
	if b.Invoker != nil {
		t.Fatal("an Invoker without Opts.Invoker")
	}
	if b.Monitor.Readings().Furnace.At.IsZero() {
		t.Fatal("no furnace reading")
	}
}

type auditFunc func(envelope.Entry) error

func (f auditFunc) Record(_ context.Context, e envelope.Entry) error { return f(e) }

// TestArmAsAfterCommsLoss: a silent instrument trips comms_loss and drops
// the relay; ArmAs refuses nothing the operator could not do: once the
// instrument reads again it resets the latch and arms (the relay reads
// back energised), as the leak test does after a loaded machine's stall.
func TestArmAsAfterCommsLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the simulated rig")
	}
	b := New(t, Opts{TimeScale: 300, Authorizer: AllowAll{Session: "bench"}, Arm: "bench-operator"})
	if err := b.Plant.Inject(plant.FaultSilent, "furnace"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(DefaultWait)
	for !b.Audit.Tripped(envelope.TripCommsLoss) {
		if time.Now().After(deadline) {
			t.Fatal("no comms_loss trip with the furnace silent")
		}
		time.Sleep(DefaultPoll)
	}
	if latched, _ := b.Interlock.Latched(); !latched {
		t.Fatal("tripped but not latched")
	}
	if err := b.Plant.Clear(plant.FaultSilent, "furnace"); err != nil {
		t.Fatal(err)
	}
	b.ArmAs(t, "bench-operator", time.Now().Add(DefaultWait), DefaultPoll)
	if latched, why := b.Interlock.Latched(); latched || !b.Plant.Relay() {
		t.Fatalf("after ArmAs: latched %v (%s), relay %v", latched, why, b.Plant.Relay())
	}
	if n := b.Audit.Count(envelope.DecisionArmed); n != 2 {
		t.Fatalf("%d armed entries, want 2", n)
	}
}

// TestImportsPointDown: the bench's own code imports no package of session/,
// transport/ or cmd/ (but its sibling cmd/hiltest/simrig): a test that needs
// one hands its part down through Opts (Opts.Materials, the analysis's
// material names), so that the session's and transport's tests can use it
// without an import cycle and the bench stays on the layers it drives.
func TestImportsPointDown(t *testing.T) {
	const mod = "hcp-edge/"
	fset := token.NewFileSet()
	pkgs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, p := range pkgs {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		files++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, up := range []string{"session", "transport", "cmd"} {
				if strings.HasPrefix(path, mod+up+"/") && !strings.HasPrefix(path, mod+"cmd/hiltest/") {
					t.Errorf("%s imports %s: the bench is below %s/", fset.Position(imp.Pos()), path, up)
				}
			}
		}
	}
	if files == 0 {
		t.Fatal("no non-test file read")
	}
}
