package caller

import (
	"sync"

	"github.com/google/uuid"

	"hcp-edge/transport/wire"
)

// Task is one submitted (or watched) task as the caller sees it.
type Task struct {
	submitID string
	ch       chan *wire.Envelope
	done     chan struct{}

	mu       sync.Mutex
	answered bool
	session  uuid.UUID
	final    *wire.Envelope
	finished bool
}

func newTask(submitID string, buf int) *Task {
	return &Task{submitID: submitID, ch: make(chan *wire.Envelope, buf), done: make(chan struct{})}
}

// SubmitID is the message_id of the task_submit ("" for a watched session).
func (t *Task) SubmitID() string { return t.submitID }

// Session returns the session id once task_accepted arrived.
func (t *Task) Session() (uuid.UUID, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session, t.session != uuid.Nil
}

// Messages delivers, in order and each once: task_accepted or
// task_rejected, the events in sequence order, then task_completed or
// task_failed (or a session_closed event with final_state ABORTED). It is
// closed after the final message (or by Client.Close). Read it until it is
// closed: a full channel holds the consumer back (unacked).
func (t *Task) Messages() <-chan *wire.Envelope { return t.ch }

// Done is closed with Messages.
func (t *Task) Done() <-chan struct{} { return t.done }

// Final returns the final message (task_rejected, task_completed,
// task_failed or the aborting session_closed event), nil before Done or when
// the client closed first.
func (t *Task) Final() *wire.Envelope {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.final
}

func (t *Task) finish(final *wire.Envelope) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return
	}
	t.finished = true
	t.final = final
	close(t.ch)
	close(t.done)
}
