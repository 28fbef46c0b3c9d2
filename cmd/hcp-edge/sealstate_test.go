package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/transport/wire"
)

// mos2As runs the seed's MoS2 task classified class through the binary,
// as TestMoS2SealedThroughCLI does (an at-rest key, an amqps uplink that
// answers nothing), and returns the stopped env, the session id and its
// task_completed.
func mos2As(t *testing.T, class string) (*env, string, *wire.TaskCompleted) {
	t.Helper()
	e, _ := sealedT3Env(t)
	task, err := os.ReadFile(seedTask)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(task, []byte(`"data_classification": "T2"`)) {
		t.Fatal("fixture: the seed task is no longer T2")
	}
	taskFile := filepath.Join(t.TempDir(), "mos2-"+class+".json")
	if err := os.WriteFile(taskFile, bytes.Replace(task, []byte(`"data_classification": "T2"`), []byte(`"data_classification": "`+class+`"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.arm()
	watch := e.cliAsync("submit", taskFile, "--watch")
	pending := e.waitSession("pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
	if pending.DataClass != class {
		t.Fatalf("pending session %+v, want %s", pending, class)
	}
	e.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	var r result
	select {
	case r = <-watch:
	case <-time.After(2 * time.Minute):
		t.Fatal("submit --watch did not end")
	}
	if r.code != exitOK {
		t.Fatalf("submit --watch: exit %d\n%s\n%s", r.code, r.stderr, r.stdout)
	}
	tc, err := decodeFinal(t, r).TaskCompleted()
	if err != nil {
		t.Fatalf("final: %v", err)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	return e, pending.ID, tc
}

// outputValues are the measured values of outputs as they are written in
// JSON (the numbers with a fraction, at least 4 characters long: "0.65",
// not "1"), so that a match in a file is no accident.
func outputValues(t *testing.T, outputs json.RawMessage) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(outputs))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case json.Number:
			if s := x.String(); strings.Contains(s, ".") && len(s) >= 4 {
				seen[s] = true
			}
		}
	}
	walk(v)
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// found returns the values of vals that file holds as numbers of their
// own (a run of digits and dots equal to the value: not the "25.2" of a
// time stamp's 13:16:25.243), each with the bytes around it.
func found(t *testing.T, file string, vals []string) []string {
	t.Helper()
	disk, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{} // each run of digits and dots → its first offset
	isNum := func(c byte) bool { return c == '.' || c >= '0' && c <= '9' }
	for i := 0; i < len(disk); {
		if !isNum(disk[i]) {
			i++
			continue
		}
		j := i
		for j < len(disk) && isNum(disk[j]) {
			j++
		}
		if _, ok := at[string(disk[i:j])]; !ok {
			at[string(disk[i:j])] = i
		}
		i = j
	}
	var out []string
	for _, v := range vals {
		if i, ok := at[v]; ok {
			out = append(out, fmt.Sprintf("%s in %q", v, disk[max(0, i-60):min(len(disk), i+len(v)+20)]))
		}
	}
	return out
}

// TestStateFileSealedT3: the seed's MoS2 task run through the binary as
// T3 leaves a state file (events, checkpoints, audit chain, outbox: one
// file) holding none of its measured output values in clear, and `audit
// verify` holds on it without the key; run as T2 (the recipe's floor: a T1
// request is raised to T2; neither is sealed) the same values are found in
// the file, so the grep is proven to see them.
func TestStateFileSealedT3(t *testing.T) {
	if testing.Short() {
		t.Skip("two MoS2 runs against the simulator (~50 s)")
	}
	t.Parallel()
	// The two runs side by side (each its own rig, daemon and state file);
	// each subtest checks its own file before its cleanup removes it.
	var seenT2, valuesT3 int
	t.Run("runs", func(t *testing.T) {
		t.Run("T2", func(t *testing.T) { // the values the grep must be able to see
			t.Parallel()
			e1, _, tc1 := mos2As(t, "T2")
			vals1 := outputValues(t, tc1.Outputs)
			got1 := found(t, filepath.Join(e1.dir, rigconfig.StateFile), vals1)
			t.Logf("T2: %d of the %d output values in the state file", len(got1), len(vals1))
			if len(got1) == 0 {
				t.Fatalf("no output value of the T2 session (%v) in its state file: the grep proves nothing", vals1)
			}
			seenT2 = len(got1)
		})
		t.Run("T3", func(t *testing.T) {
			t.Parallel()
			e3, sid, tc3 := mos2As(t, "T3")
			vals3 := outputValues(t, tc3.Outputs)
			state := filepath.Join(e3.dir, rigconfig.StateFile)
			if got := found(t, state, vals3); len(got) != 0 {
				t.Fatalf("the T3 session's state file holds %d of its %d output values in clear: %v", len(got), len(vals3), got)
			}
			t.Logf("T3 session %s: none of its %d output values in the state file", sid, len(vals3))
			// The daemon is down: the CLI opens the state file read-only,
			// without the key.
			if r := e3.cli("audit", "verify"); r.code != exitOK || !strings.Contains(r.stdout, "opened read-only") {
				t.Fatalf("audit verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			valuesT3 = len(vals3)
		})
	})
	if !t.Failed() && valuesT3 < seenT2 {
		t.Fatalf("T3 outputs: %d values, the T2 run had %d in its state file", valuesT3, seenT2)
	}
}
