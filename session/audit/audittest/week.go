// Package audittest holds test support for the audit log's readers: a
// week of a rig's audit entries, as the agent writes them, for the
// report's benchmarks.
package audittest

import (
	"encoding/json"
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/audit"
)

// EnvelopeVersion is the envelope version Week's interlock entries name.
const EnvelopeVersion = "sha256:0123456789abcdef"

// Week is seven days from start of the kill test's traffic
// (TestKillAgentAtRandom), around the clock: per day, sessionsPerDay
// sessions alternating leak-check and material synthesis, each a gate
// decision, an approval, its transitions and, per action, the accepted
// and executed tool calls (actionsPerSession actions, one in 97 refused
// for its rate, with readings); every third session after a SIGKILL and
// restart (the furnace's start-up write, non-volatile one time in three,
// and the operator's arm); one over-temperature trip and its reset a
// day. The entries are in append order, without Seq, Prev or Hash.
func Week(start time.Time, sessionsPerDay, actionsPerSession int) []audit.Entry {
	var out []audit.Entry
	add := func(at time.Time, sid string, k audit.Kind, d any) {
		b, err := json.Marshal(d)
		if err != nil {
			panic(err) // the fixture's own values
		}
		out = append(out, audit.Entry{At: at, SessionID: sid, Kind: k, Detail: string(b)})
	}
	interlock := func(at time.Time, e envelope.Entry) {
		e.At, e.Envelope = at, EnvelopeVersion
		k := audit.KindInterlock
		if e.Decision == envelope.DecisionAccepted || e.Decision == envelope.DecisionExecuted {
			k = audit.KindToolCall
		}
		add(at, e.SessionID, k, e)
	}
	control := func(at time.Time, op string) {
		add(at, "", audit.KindControl, map[string]any{"op": op, "outcome": "done", "operator": "olga", "uid": 1001, "gid": 1001, "user": "olga"})
	}
	limit, rate := 1100.0, 10.0
	for day := range 7 {
		t0 := start.AddDate(0, 0, day)
		step := 24 * time.Hour / time.Duration(sessionsPerDay+1)
		for i := range sessionsPerDay {
			at := t0.Add(time.Duration(i) * step)
			tick := func() time.Time { at = at.Add(50 * time.Millisecond); return at }
			sid := fmt.Sprintf("s-%d-%03d", day, i)
			capab := "leak-check"
			if i%2 == 1 {
				capab = "cvd-material-synthesis"
			}
			if i%3 == 0 {
				add(tick(), "", audit.KindControl, map[string]any{"op": "init", "outcome": "done", "instrument": "eurotherm-3216@1",
					"channel": "instrument_mode", "value": 0, "non_volatile": i%9 == 0})
				control(tick(), "arm")
			}
			add(tick(), sid, audit.KindGate, map[string]any{"message_id": sid, "caller_id": "harness-alpha-001", "capability": capab,
				"version": "1.0.0", "outcome": "accepted", "risk_level": "R3", "data_classification": "T1"})
			add(tick(), sid, audit.KindTransition, map[string]any{"to": "PENDING", "trigger": "submit"})
			add(tick(), sid, audit.KindApproval, map[string]any{"decision": "approval_signed", "operator": "olga", "uid": 1001, "user": "olga",
				"signature": 1, "required": 1, "risk_level": "R3", "meaning": "approved for execution"})
			add(tick(), sid, audit.KindTransition, map[string]any{"from": "PENDING", "to": "RUNNING", "trigger": "approve"})
			for j := range actionsPerSession {
				a := envelope.SetpointAction(device.Celsius(float64(20 + j%800)))
				if j%7 == 3 {
					a = envelope.FlowAction("carrier", device.Flow(j%100))
				}
				interlock(tick(), envelope.Entry{SessionID: sid, Action: &a, Decision: envelope.DecisionAccepted})
				interlock(tick(), envelope.Entry{SessionID: sid, Action: &a, Decision: envelope.DecisionExecuted})
				if j%97 == 50 {
					now := tick()
					interlock(now, envelope.Entry{SessionID: sid, Action: &a, Decision: envelope.DecisionRefused, Rule: envelope.RuleRate,
						Reason: "envelope: furnace.setpoint: max_rate_of_change",
						Readings: []envelope.Reading{{Channel: "furnace.setpoint", Value: 30, Limit: &rate, Unit: "celsius/min"},
							{Channel: "furnace.temperature", Value: 873.15, Unit: "K", At: now}, {Channel: "chamber.pressure", Value: 50, Unit: "Pa", At: now}}})
				}
			}
			add(tick(), sid, audit.KindTransition, map[string]any{"from": "RUNNING", "to": "COMPLETED", "trigger": "done"})
		}
		read := t0.Add(23 * time.Hour)
		interlock(read.Add(40*time.Millisecond), envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature,
			Rule: "immediate_shutdown", Reason: "over_temperature on furnace.temperature: 1105 celsius",
			Readings: []envelope.Reading{{Channel: "furnace.temperature", Value: 1105, Limit: &limit, Unit: "celsius", At: read}}})
		control(read.Add(time.Minute), "reset")
	}
	return out
}
