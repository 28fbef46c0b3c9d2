package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
	"hcp-edge/session/audit"
	"hcp-edge/session/engine"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/alert"
	"hcp-edge/transport/wire"
)

// alerting maps the agent's events to alerts to people (transport/alert,
// docs/ALERTS.md): one small hook per event source, each a non-blocking
// alert.Alerter.Notify. The Alerter is set once the state file is open;
// before that (the disk watcher starts first) and without receivers
// (alerts off) the hooks do nothing.
type alerting struct {
	p atomic.Pointer[alert.Alerter]

	// the broker watcher (watchBroker), stopped by close
	stop chan struct{}
	wg   sync.WaitGroup
}

// start builds the Alerter of the alerts section over the state file db
// (nil without receivers); every delivery and every failed attempt is
// audited in log.
func (a *alerting) start(cfg alert.Config, db *bolt.DB, log *audit.Log, clock func() time.Time, lg *slog.Logger) error {
	x, err := alert.New(db, cfg, alert.Opts{Now: clock, Logger: lg.With("component", "alerts"),
		OnDelivery: func(d alert.Delivery) { auditDelivery(log, d, lg) }})
	if err != nil {
		return err // each problem at its alerts.KEY, as config check says it
	}
	if x != nil {
		lg.Info("alerts on", "receivers", len(cfg.Receivers), "queued", x.Queued(), "group_window", cfg.GroupWindow)
	}
	a.p.Store(x)
	return nil
}

// close stops the broker watcher and the Alerter (what is not delivered
// waits in the state file for the next start).
func (a *alerting) close() {
	if a.stop != nil {
		close(a.stop)
		a.wg.Wait()
		a.stop = nil
	}
	_ = a.p.Load().Close()
}

// notify hands al to the Alerter without blocking (nil-safe).
func (a *alerting) notify(al alert.Alert) { a.p.Load().Notify(al) }

// auditDelivery records one delivery or failed attempt in the audit log.
func auditDelivery(l *audit.Log, d alert.Delivery, lg *slog.Logger) {
	outcome := "delivered"
	switch {
	case d.GaveUp:
		outcome = "gave_up"
	case d.Err != nil:
		outcome = "failed"
	}
	det := map[string]any{"outcome": outcome, "receiver": d.Receiver, "alert_id": d.Alert.ID, "class": d.Alert.Class,
		"severity": d.Alert.Severity, "title": d.Alert.Title, "count": d.Alert.Count, "attempt": d.Attempt}
	if d.Err != nil {
		det["error"] = d.Err.Error()
	}
	if !d.Next.IsZero() {
		det["next_attempt"] = d.Next
	}
	b, _ := json.Marshal(det)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.Append(ctx, audit.Entry{Kind: audit.KindAlert, Detail: string(b)}); err != nil {
		lg.Error("audit of an alert delivery failed", "receiver", d.Receiver, "id", d.Alert.ID, "err", err)
	}
}

// auditor wraps the interlock's auditor: once a trip or a halt is
// recorded (or failed to be), it raises the alert. Notify does not block,
// so the trip and the e-stop are not slowed.
func (a *alerting) auditor(next envelope.Auditor) envelope.Auditor {
	return alertAuditor{a: a, next: next}
}

type alertAuditor struct {
	a    *alerting
	next envelope.Auditor
}

func (x alertAuditor) Record(ctx context.Context, e envelope.Entry) error {
	err := x.next.Record(ctx, e)
	if al, ok := interlockAlert(e); ok {
		x.a.notify(al)
	}
	return err
}

// interlockAlert is the alert of an interlock decision: a trip (a leak
// its own class, the e-stop input the e-stop's), an e-stop or another
// safe state; not the shutdown policy's safe state, nor anything else.
func interlockAlert(e envelope.Entry) (alert.Alert, bool) {
	if e.Decision != envelope.DecisionTripped && e.Decision != envelope.DecisionHalted {
		return alert.Alert{}, false // every tool call passes here: nothing allocated for it
	}
	al := alert.Alert{Severity: alert.SeverityCritical, At: e.At, Text: e.Reason, Fields: map[string]string{}}
	if e.SessionID != "" {
		al.Fields["session"] = e.SessionID
	}
	if e.Operator != "" {
		al.Fields["operator"] = e.Operator
	}
	switch e.Decision {
	case envelope.DecisionTripped:
		al.Class, al.Key = alert.ClassTrip, string(e.Trip)
		switch e.Trip {
		case envelope.TripGasLeak:
			al.Class = alert.ClassLeak
		case envelope.TripEStop:
			al.Class = alert.ClassEStop
		}
		al.Title = fmt.Sprintf("trip %s: %s ran", e.Trip, e.Rule)
		al.Fields["trip"], al.Fields["procedure"] = string(e.Trip), string(e.Rule)
		if envelope.Procedure(e.Rule) == envelope.ProcCloseValvesAndAlert {
			al.Title = fmt.Sprintf("trip %s: gas lines closed, heater and pumps left running: attend the rig", e.Trip)
		}
	case envelope.DecisionHalted:
		if strings.HasPrefix(e.Reason, "agent shutdown") {
			return al, false // the shutdown policy, not an emergency
		}
		al.Class, al.Key, al.Title = alert.ClassEStop, "safe_state", "e-stop: every output driven to its safe state"
		if !strings.HasPrefix(e.Reason, "estop") {
			al.Severity, al.Title = alert.SeverityWarning, "safe state: every output driven to its safe state"
		}
	default:
		return al, false
	}
	return al, true
}

// outbound wraps the engine's local fan-out: a session that failed and an
// approval or a question waiting for a human raise their alerts.
func (a *alerting) outbound(next engine.Outbound) engine.Outbound {
	return engine.OutboundFunc(func(ctx context.Context, caller string, env *wire.Envelope) error {
		err := next.Publish(ctx, caller, env)
		if al, ok := sessionAlert(env); ok {
			a.notify(al)
		}
		return err
	})
}

// sessionAlert is the alert of an outbound message, if it warrants one:
// task_failed, or an approval_pending or question_pending event. Its id
// is derived from the session (and the approval), so the same event seen
// twice (a recovery, a redelivery) is one alert.
func sessionAlert(env *wire.Envelope) (alert.Alert, bool) {
	sid := ""
	if env.SessionID != nil {
		sid = env.SessionID.String()
	}
	al := alert.Alert{At: env.Timestamp, Key: sid, Fields: map[string]string{"session": sid}}
	switch env.Type {
	case wire.TypeTaskFailed:
		var p wire.TaskFailed
		if json.Unmarshal(env.Payload, &p) != nil {
			return al, false
		}
		al.ID, al.Class, al.Severity = "session_failed/"+sid, alert.ClassSessionFailed, alert.SeverityWarning
		al.Title = fmt.Sprintf("session %s failed: %s", sid, p.ErrorCode)
		al.Text, al.Fields["error_code"] = p.ErrorMessage, p.ErrorCode
		return al, true
	case wire.TypeEvent:
		var p wire.Event
		if json.Unmarshal(env.Payload, &p) != nil {
			return al, false
		}
		var d struct {
			Stage    string         `json:"stage"`
			Message  string         `json:"message"`
			Details  map[string]any `json:"details"`
			Question struct {
				CheckpointID string `json:"checkpoint_id"`
				AnswerWith   string `json:"answer_with"`
			} `json:"question"`
		}
		_ = json.Unmarshal(p.Data, &d)
		detail := func(k string) string { s, _ := d.Details[k].(string); return s }
		switch p.EventType {
		case engine.EventApprovalPending:
			al.Class, al.Severity = alert.ClassApprovalPending, alert.SeverityWarning
			al.ID = "approval_pending/" + sid + "/" + detail("approval_id")
			al.Title = fmt.Sprintf("approval pending: %s task waits for a human (hcp-edge approve %s)", detail("risk_level"), detail("approval_id"))
			al.Fields["approval_id"], al.Fields["risk_level"], al.Fields["expires_at"] = detail("approval_id"), detail("risk_level"), detail("expires_at")
		case string(lifecycle.EventProgress):
			if d.Stage != engine.StageAwaitingInput {
				return al, false
			}
			// A recipe's question (session/engine, question.go): the
			// session is PAUSED until an operator answers at the rig.
			al.Class, al.Severity = alert.ClassQuestionPending, alert.SeverityWarning
			al.ID = "question_pending/" + sid + "/" + d.Question.CheckpointID
			al.Title = "question pending: a recipe waits for an answer at the rig (" + d.Question.AnswerWith + ")"
			al.Fields["checkpoint"] = d.Question.CheckpointID
		default:
			return al, false
		}
		al.Text = d.Message
		return al, true
	}
	return al, false
}

// recovered raises the alert of a session a restart held (or failed:
// its task_failed raises that one, with the same id).
func (a *alerting) recovered(r engine.Recovery, start time.Time) {
	if r.Decision.Action != engine.ActHold {
		return
	}
	a.notify(alert.Alert{ID: "session_held/" + r.SessionID + "/" + strconv.FormatInt(start.UnixNano(), 10),
		Class: alert.ClassSessionHeld, Severity: alert.SeverityWarning, Key: r.SessionID,
		Title: fmt.Sprintf("session %s held after a restart: an operator must arm the rig and resume it", r.SessionID),
		Text:  r.Decision.Reason, Fields: map[string]string{"session": r.SessionID, "from": string(r.From)}})
}

// disk raises the disk alarm (and says when it clears).
func (a *alerting) disk(s diskspace.State) {
	al := alert.Alert{Class: alert.ClassDiskAlarm, Key: "state_dir", Severity: alert.SeverityCritical,
		Title: "state directory short of space: command intake paused", Text: s.Reason,
		Fields: map[string]string{"free_bytes": strconv.FormatUint(s.Free, 10), "watermark_bytes": strconv.FormatUint(s.Watermark, 10)}}
	if !s.Low {
		al.Severity, al.Title, al.Text = alert.SeverityInfo, "state directory: space back above the watermark", ""
	}
	a.notify(al)
}

// watchBroker raises broker_unreachable once the uplink (its status:
// nil without one) has been disconnected for longer than after (once an
// outage, and an info alert when it reconnects), checking every every.
func (a *alerting) watchBroker(status func() *reply.Uplink, after, every time.Duration) {
	if a.p.Load() == nil || after <= 0 || status() == nil {
		return
	}
	a.stop = make(chan struct{})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		var down time.Time
		alerted := false
		for {
			select {
			case <-a.stop:
				return
			case now := <-t.C:
				s := status()
				switch {
				case s.Connected:
					if alerted {
						a.notify(alert.Alert{Class: alert.ClassBrokerUnreachable, Key: s.Broker, Severity: alert.SeverityInfo,
							Title: "broker reachable again", Fields: map[string]string{"broker": s.Broker, "down_for": now.Sub(down).Round(time.Second).String()}})
					}
					down, alerted = time.Time{}, false
				case down.IsZero():
					down = now
				case !alerted && now.Sub(down) >= after:
					alerted = true
					a.notify(alert.Alert{Class: alert.ClassBrokerUnreachable, Key: s.Broker, Severity: alert.SeverityCritical,
						Title: fmt.Sprintf("broker unreachable for %s: no commands in, results wait in the outbox", now.Sub(down).Round(time.Second)),
						Text:  s.LastError, Fields: map[string]string{"broker": s.Broker, "outbox_backlog": strconv.Itoa(s.Backlog)}})
				}
			}
		}
	}()
}
