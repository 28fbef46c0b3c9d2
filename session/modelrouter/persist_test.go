package modelrouter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/analysis"
	mr "hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
)

// TestInvocationsAuditedWithTask: every model the router considers for a
// task (invoked, failed or refused) is audited as an EventInvocation under
// the task, with the tracker's record.
func TestInvocationsAuditedWithTask(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	srv.Script(modeltest.ServerError)
	ev := &events{}
	r := newRouter(t, registry(remoteModel("remote-best", 3, mr.T1, srv.Base())), mr.Opts{Auditor: ev, Retries: -1})
	d, err := r.Analyze(context.Background(), mr.Request{Task: "sess-1", Spectrum: spectrum(plant.Film{MoS2: 1}, 1000, 4, plant.SpectrumFaults{}),
		Material: analysis.MoS2, Hint: mr.HintBest})
	if err != nil {
		t.Fatal(err)
	}
	got := ev.kinds(mr.EventInvocation)
	if len(got) != len(d.Attempts) {
		t.Fatalf("%d invocations audited, %d attempts: %+v", len(got), len(d.Attempts), d.Attempts)
	}
	seen := map[mr.Outcome]bool{}
	for _, e := range got {
		if e.Task != "sess-1" || e.Invocation == nil || e.Invocation.Task != "sess-1" || e.Invocation.Model != e.Model {
			t.Fatalf("audited %+v", e)
		}
		seen[e.Invocation.Outcome] = true
		if e.Invocation.Outcome == mr.ServerError && (e.Invocation.Instance == "" || e.Invocation.Error == "" || e.Invocation.Tier != 3) {
			t.Fatalf("failed invocation audited as %+v", e.Invocation)
		}
	}
	if !seen[mr.OK] || !seen[mr.ServerError] {
		t.Fatalf("outcomes audited %v", seen)
	}
}

// TestTrackerSurvivesRestart: the day's spend and the statistics are saved
// and loaded; the next day starts at zero.
func TestTrackerSurvivesRestart(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tr := mr.NewTracker(clock)
	tr.Record(mr.Invocation{Model: "remote-best", Tier: 3, Outcome: mr.OK, Cost: 0.02, Latency: 40 * time.Millisecond, Confidence: 0.9})
	tr.Record(mr.Invocation{Model: "remote-best", Tier: 3, Outcome: mr.Refused})
	path := filepath.Join(t.TempDir(), "model-tracker.json")
	if err := tr.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := mr.LoadTracker(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.SpentToday(); got != 0.02 {
		t.Fatalf("spent today after a restart: %v", got)
	}
	s := back.Stats()
	if len(s) != 1 || s[0].Calls != 1 || s[0].Outcomes[mr.Refused] != 1 || s[0].P50 != 40*time.Millisecond || s[0].CostToday != 0.02 {
		t.Fatalf("stats after a restart: %+v", s)
	}
	back.Record(mr.Invocation{Model: "remote-best", Tier: 3, Outcome: mr.OK, Cost: 0.01})
	if got := back.SpentToday(); got < 0.0299 || got > 0.0301 {
		t.Fatalf("spent today after one more call: %v", got)
	}
	mu.Lock()
	now = now.Add(24 * time.Hour)
	mu.Unlock()
	if got, s := back.SpentToday(), back.Stats(); got != 0 || s[0].CostToday != 0 || s[0].Cost < 0.0299 {
		t.Fatalf("the next day: spent %v, stats %+v", got, s)
	}

	// Absent: empty. Garbage: an error, never a silent reset of the spend.
	if tr, err := mr.LoadTracker(filepath.Join(t.TempDir(), "none.json"), clock); err != nil || tr.SpentToday() != 0 {
		t.Fatalf("absent file: %v", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mr.LoadTracker(path, clock); err == nil {
		t.Fatal("a garbled tracker file loaded")
	}
}

// TestSealedDataWithheldFromAudit: for T3 data the audit events carry no
// value read from the data (the audit log stays in clear while the
// session's outputs are sealed): no confidence, no server text, a generic
// fallback; the tracker's confidence statistics leave it out.
func TestSealedDataWithheldFromAudit(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	srv.SetDefault(modeltest.ServerError)
	ev := &events{}
	r := newRouter(t, registry(remoteModel("remote-t3", 3, mr.T3, srv.Base())), mr.Opts{Auditor: ev, Retries: -1})
	d, err := r.Analyze(context.Background(), mr.Request{Task: "sealed", Spectrum: spectrum(plant.Film{MoS2: 1}, 1000, 4, plant.SpectrumFaults{}),
		Material: analysis.MoS2, Hint: mr.HintBest, DataClass: mr.T3})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Fallback || len(srv.Requests()) == 0 {
		t.Fatalf("the remote model was not asked, or did not fail: %+v", d)
	}
	values := []string{strconv.FormatFloat(d.Answer.Confidence, 'g', -1, 64), strconv.FormatFloat(d.Fit.Confidence, 'g', -1, 64),
		fmt.Sprintf("%.2f", d.Answer.Confidence)}
	ev.mu.Lock()
	all := append([]mr.Event(nil), ev.ev...)
	ev.mu.Unlock()
	for _, e := range all {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if strings.Contains(string(b), v) {
				t.Errorf("%s in the audited %s", v, b)
			}
		}
		if e.Kind == mr.EventInvocation && (!e.Withheld || e.Invocation.Confidence != 0 ||
			(e.Invocation.Outcome == mr.ServerError && e.Invocation.Error != "")) {
			t.Errorf("not withheld: %s", b)
		}
	}
	if len(ev.kinds(mr.EventFallback)) != 1 {
		t.Fatalf("fallback events %+v", ev.kinds(mr.EventFallback))
	}
	for _, s := range r.Tracker().Stats() {
		if s.MeanConfidence != 0 {
			t.Errorf("%s: mean confidence %v from T3 answers", s.Model, s.MeanConfidence)
		}
	}
}
