package amqptest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// Echo is a fake session engine: it accepts every task_submit, then appends
// Events sequenced progress events (1…Events, Interval apart) and a
// task_completed to the outbox; it ignores aborts. Close waits for its
// sessions' goroutines.
type Echo struct {
	Outbox   *outbox.Outbox
	Events   int
	Interval time.Duration

	calls    atomic.Int64
	sessions atomic.Int64
	mu       sync.Mutex
	users    []string
	wg       sync.WaitGroup
	stop     chan struct{}
	once     sync.Once
}

var _ tamqp.Engine = (*Echo)(nil)

// NewEcho returns an Echo emitting n events per session.
func NewEcho(ob *outbox.Outbox, n int, interval time.Duration) *Echo {
	return &Echo{Outbox: ob, Events: n, Interval: interval, stop: make(chan struct{})}
}

// Calls is how many commands reached Handle.
func (e *Echo) Calls() int64 { return e.calls.Load() }

// Sessions is how many sessions Handle created.
func (e *Echo) Sessions() int64 { return e.sessions.Load() }

// Users returns the user_id of every command handled, in order.
func (e *Echo) Users() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.users...)
}

// Handle implements tamqp.Engine.
func (e *Echo) Handle(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	e.calls.Add(1)
	e.mu.Lock()
	e.users = append(e.users, cmd.UserID)
	e.mu.Unlock()
	if cmd.Envelope.Type != wire.TypeTaskSubmit {
		return tamqp.Outcome{}, nil
	}
	sid := uuid.New()
	acc, err := wire.NewEnvelope(&sid, &wire.TaskAccepted{SessionToken: "tok-" + sid.String()[:8], RiskLevel: "R1"}, time.Now())
	if err != nil {
		return tamqp.Outcome{}, err
	}
	e.sessions.Add(1)
	caller := cmd.CallerID
	return tamqp.Outcome{
		Replies: []tamqp.Reply{{Envelope: acc}},
		Committed: func() {
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				e.run(caller, sid)
			}()
		},
	}, nil
}

func (e *Echo) run(caller string, sid uuid.UUID) {
	emit := func(p wire.Payload) bool {
		env, err := wire.NewEnvelope(&sid, p, time.Now())
		if err != nil {
			panic(err) // a bug in Echo
		}
		m, err := outbox.MessageFor(caller, env, "")
		if err != nil {
			panic(err)
		}
		_, err = e.Outbox.Append(m)
		return err == nil
	}
	for i := 1; i <= e.Events; i++ {
		if e.Interval > 0 {
			select {
			case <-e.stop:
				return
			case <-time.After(e.Interval):
			}
		}
		if !emit(&wire.Event{EventType: wire.EventProgress, Sequence: uint64(i),
			Data: json.RawMessage(fmt.Sprintf(`{"stage":"echo","percent":%d}`, i*100/e.Events))}) {
			return
		}
	}
	emit(&wire.TaskCompleted{Outputs: json.RawMessage(fmt.Sprintf(`{"events":%d}`, e.Events))})
}

// Close stops emitting and waits for the sessions' goroutines.
func (e *Echo) Close() {
	e.once.Do(func() { close(e.stop) })
	e.wg.Wait()
}
