package main

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/session/budget"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// TestBudgetOverrunThroughBroker: the seed's task, published by
// harness-alpha-001 on the real broker with constraints.budgets asking for
// at most 1 scc of H2S (published raw, as a caller of another
// implementation would; a Go caller sets wire.Constraints.Budgets, which
// session/budget's TestWireBudgetsMatchSpec keeps the same shape), is
// approved, reports its budgets in data.budgets of the progress events the
// caller receives, and ends in task_failed budget_exceeded naming H2S.
func TestBudgetOverrunThroughBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the MoS2 recipe through the broker")
	}
	b := newBrokerEnv(t)
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	tap := b.tap()

	data, err := os.ReadFile(seedTask)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	env["message_id"] = id
	env["timestamp"] = time.Now().UTC().Format(wire.TimestampLayout)
	p := env["payload"].(map[string]any)
	p["caller_id"] = b.callerID
	c, _ := p["constraints"].(map[string]any)
	if c == nil {
		c = map[string]any{}
		p["constraints"] = c
	}
	c["budgets"] = map[string]any{"gas_volume_scc": map[string]any{"H2S": 1}}
	body, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	publishCommand(t, b.conn, b.calleeID, amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding,
		DeliveryMode: wire.DeliveryMode, MessageId: id, Type: string(wire.TypeTaskSubmit), Timestamp: time.Now(),
		UserId: amqptest.AlphaUser, Body: body})

	pending := b.waitSession("pending approval", func(s sessionView) bool {
		return s.State == "PENDING" && s.ApprovalID != "" && s.Caller == b.callerID
	})
	b.mustCLI("approve", pending.ApprovalID, "--operator", "olga")

	var budgets int
	timeout := time.After(2 * time.Minute)
	for {
		var d amqp091.Delivery
		select {
		case d = <-tap:
		case <-timeout:
			t.Fatalf("no final message of %s through the broker (%d progress events with budgets)", pending.ID, budgets)
		}
		m, err := wire.Decode(d.Body)
		if err != nil {
			t.Fatalf("undecodable delivery: %v", err)
		}
		if m.SessionID == nil || m.SessionID.String() != pending.ID {
			continue
		}
		if ev, err := m.Event(); err == nil && ev.EventType == "progress" {
			var pd struct {
				Budgets *budget.Report `json:"budgets"`
			}
			if json.Unmarshal(ev.Data, &pd) == nil && pd.Budgets != nil && len(pd.Budgets.Lines) > 0 {
				budgets++
			}
			continue
		}
		if m.Type == wire.TypeTaskCompleted {
			t.Fatalf("task_completed despite a 1 scc H2S budget: %s", d.Body)
		}
		if m.Type != wire.TypeTaskFailed {
			continue
		}
		tf, err := m.TaskFailed()
		if err != nil {
			t.Fatal(err)
		}
		var det struct {
			Budget *budget.ExceededError `json:"budget"`
		}
		if err := json.Unmarshal(tf.ErrorDetails, &det); err != nil || tf.ErrorCode != budget.Code || det.Budget == nil ||
			det.Budget.Gas != "H2S" || det.Budget.Used <= det.Budget.Limit {
			t.Fatalf("task_failed %s %s %s: %v", tf.ErrorCode, tf.ErrorMessage, tf.ErrorDetails, err)
		}
		if budgets == 0 {
			t.Fatal("no progress event carried data.budgets to the caller")
		}
		t.Logf("through the broker: %s: %s (%d progress events with budgets)", tf.ErrorCode, tf.ErrorMessage, budgets)
		break
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
