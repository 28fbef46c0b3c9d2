package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
	"hcp-edge/session/engine"
	"hcp-edge/transport/alert"
	"hcp-edge/transport/wire"
)

// TestInterlockAlert: which interlock decisions alert, in which class and
// severity; close_all_valves_and_alert says the heater runs on.
func TestInterlockAlert(t *testing.T) {
	for _, tc := range []struct {
		name     string
		e        envelope.Entry
		class    alert.Class
		severity alert.Severity
		title    string // a part of the title
	}{
		{"leak", envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripGasLeak, Rule: envelope.Rule(envelope.ProcCloseValvesAndAlert), Reason: "gas_leak_detected on leak_detected"},
			alert.ClassLeak, alert.SeverityCritical, "heater and pumps left running"},
		{"over temperature", envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature, Rule: envelope.Rule(envelope.ProcImmediateShutdown)},
			alert.ClassTrip, alert.SeverityCritical, "over_temperature: immediate_shutdown ran"},
		{"gas interlock lost", envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripGasInterlockLost, Rule: envelope.Rule(envelope.ProcCloseValvesAndAlert)},
			alert.ClassTrip, alert.SeverityCritical, "gas lines closed"},
		{"e-stop input", envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripEStop, Rule: envelope.Rule(envelope.ProcSafeState)},
			alert.ClassEStop, alert.SeverityCritical, "trip estop"},
		{"e-stop", envelope.Entry{Decision: envelope.DecisionHalted, Reason: "estop by alice (control socket)"},
			alert.ClassEStop, alert.SeverityCritical, "e-stop"},
		{"recovery safe state", envelope.Entry{Decision: envelope.DecisionHalted, Reason: "recovery of session s: checkpoint lost"},
			alert.ClassEStop, alert.SeverityWarning, "safe state"},
		{"shutdown policy", envelope.Entry{Decision: envelope.DecisionHalted, Reason: "agent shutdown (policy safe_state)"}, "", "", ""},
		{"refusal", envelope.Entry{Decision: envelope.DecisionRefused, Rule: "max_temperature"}, "", "", ""},
		{"executed", envelope.Entry{Decision: envelope.DecisionExecuted}, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			al, ok := interlockAlert(tc.e)
			if ok != (tc.class != "") {
				t.Fatalf("alerts: %v, want %v", ok, tc.class != "")
			}
			if ok && (al.Class != tc.class || al.Severity != tc.severity || !strings.Contains(al.Title, tc.title)) {
				t.Errorf("alert %+v, want class %s severity %s title with %q", al, tc.class, tc.severity, tc.title)
			}
		})
	}
}

// TestSessionAlert: task_failed, approval_pending and a recipe's question alert with ids made
// from the session (and the approval), so that a repeat is one alert;
// other messages do not.
func TestSessionAlert(t *testing.T) {
	sid := uuid.New()
	env := func(p wire.Payload) *wire.Envelope {
		e, err := wire.NewEnvelope(&sid, p, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	failed := env(&wire.TaskFailed{ErrorCode: "budget_exceeded", ErrorMessage: "actions budget"})
	al, ok := sessionAlert(failed)
	if !ok || al.Class != alert.ClassSessionFailed || al.ID != "session_failed/"+sid.String() || al.Fields["error_code"] != "budget_exceeded" {
		t.Errorf("task_failed: %v %+v", ok, al)
	}
	data, _ := json.Marshal(map[string]any{"code": engine.EventApprovalPending, "message": "R3 needs a human",
		"details": map[string]string{"approval_id": "apr-1", "risk_level": "R3", "expires_at": "2026-12-07T08:00:00Z"}})
	al, ok = sessionAlert(env(&wire.Event{EventType: engine.EventApprovalPending, Sequence: 2, Data: data}))
	if !ok || al.Class != alert.ClassApprovalPending || al.ID != "approval_pending/"+sid.String()+"/apr-1" ||
		al.Fields["risk_level"] != "R3" || !strings.Contains(al.Title, "hcp-edge approve apr-1") {
		t.Errorf("approval_pending: %v %+v", ok, al)
	}
	if _, ok := sessionAlert(env(&wire.Event{EventType: "progress", Sequence: 3, Data: json.RawMessage(`{}`)})); ok {
		t.Error("a progress event alerted")
	}
	// A recipe's question: the progress event of stage awaiting_input.
	q, _ := json.Marshal(map[string]any{"stage": engine.StageAwaitingInput, "message": "Which precursor is in the boat?",
		"question": map[string]any{"checkpoint_id": "ckpt-000003", "answer_with": "hcp-edge answer " + sid.String() + " ckpt-000003 VALUE"}})
	al, ok = sessionAlert(env(&wire.Event{EventType: "progress", Sequence: 4, Data: q}))
	if !ok || al.Class != alert.ClassQuestionPending || al.ID != "question_pending/"+sid.String()+"/ckpt-000003" ||
		al.Fields["checkpoint"] != "ckpt-000003" || !strings.Contains(al.Title, "hcp-edge answer") || al.Text != "Which precursor is in the boat?" {
		t.Errorf("question pending: %v %+v", ok, al)
	}
}

// TestAlertingOff: without receivers every hook is a no-op.
func TestAlertingOff(t *testing.T) {
	var a alerting
	a.notify(alert.Alert{Class: alert.ClassTrip})
	a.recovered(engine.Recovery{SessionID: "s", Decision: engine.Decision{Action: engine.ActHold}}, time.Now())
	a.watchBroker(func() *reply.Uplink { return nil }, time.Minute, time.Second)
	a.close()
}

// TestWatchBroker: a broker down past the limit raises one critical
// broker_unreachable, and its return one info alert.
func TestWatchBroker(t *testing.T) {
	h := &hookServer{}
	a := startTestAlerting(t, h)
	var mu sync.Mutex
	st := &reply.Uplink{Broker: "amqps://broker:5671/hcp", Connected: true}
	set := func(c bool) { mu.Lock(); st.Connected = c; mu.Unlock() }
	status := func() *reply.Uplink { mu.Lock(); defer mu.Unlock(); c := *st; return &c }
	a.watchBroker(status, 200*time.Millisecond, 10*time.Millisecond)
	set(false)
	waitAlerts(t, h, "broker_unreachable", 1)
	set(true)
	waitAlerts(t, h, "broker_unreachable", 2)
	a.close()
	got := h.all()
	if got[0]["severity"] != "critical" || got[1]["severity"] != "info" || len(got) != 2 {
		t.Errorf("alerts: %v", got)
	}
}

// hookServer is a webhook receiver keeping the alerts it was sent.
type hookServer struct {
	mu  sync.Mutex
	got []map[string]any
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m map[string]any
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.got = append(h.got, m)
	h.mu.Unlock()
}

func (h *hookServer) all() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.got...)
}

// startTestAlerting is an alerting whose Alerter (a bbolt file of its own)
// sends every class to h.
func startTestAlerting(t *testing.T, h *hookServer) *alerting {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg := alert.Config{Receivers: []alert.ReceiverConfig{{URL: srv.URL, MinSeverity: alert.SeverityInfo}}, RetryMin: 10 * time.Millisecond}
	cfg.Defaults()
	x, err := alert.New(db, cfg, alert.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	a := &alerting{}
	a.p.Store(x)
	t.Cleanup(a.close)
	return a
}

// waitAlerts waits until h got n alerts of class (hang guard).
func waitAlerts(t *testing.T, h *hookServer, class string, n int) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(10 * time.Millisecond) {
		c := 0
		for _, m := range h.all() {
			if m["class"] == class {
				c++
			}
		}
		if c >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s alerts, want %d", c, class, n)
		}
	}
}

// TestDiskAlarm: the disk alarm alerts critical, its clearing info: two
// alerts (not one group), both delivered at once.
func TestDiskAlarm(t *testing.T) {
	h := &hookServer{}
	a := startTestAlerting(t, h)
	a.disk(diskspace.State{Low: true, Free: 1 << 20, Watermark: 64 << 20, Reason: "free 1 MiB below the watermark 64 MiB"})
	a.disk(diskspace.State{Low: false, Free: 512 << 20, Watermark: 64 << 20})
	waitAlerts(t, h, "disk_alarm", 2)
	got := h.all()
	if got[0]["severity"] != "critical" || got[1]["severity"] != "info" || !strings.Contains(got[0]["text"].(string), "below the watermark") {
		t.Errorf("disk alerts: %v", got)
	}
}
