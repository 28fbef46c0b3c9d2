package uplink

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/atrest"
	"hcp-edge/session/store"
	"hcp-edge/transport/outbox"
)

// sealer is the outbox's Sealer: a message of a T3/T4 session (its
// session_id, the correlation id, names a stored session whose data class
// store.SealedClass seals) waits in the outbox with its body sealed under
// the at-rest key the store seals that session's events with, bound to the
// session and the message_id — events, task_completed and task_failed with
// their outputs, artifact chunks. Other messages are stored as they are.
// Without a key such a message is refused (the transaction rolls back),
// unless the engine marked it as holding none of the session's data
// (store.Message.Unsealed, QueueTx).
type sealer struct{ st *store.Store }

var _ outbox.Sealer = sealer{}

// SealTx implements outbox.Sealer.
func (s sealer) SealTx(tx *bolt.Tx, m *outbox.Message) ([]byte, error) {
	sid := m.CorrelationID
	if sid == "" {
		return nil, nil
	}
	var sess store.Session
	var err error
	if tx != nil {
		var w *store.Tx
		if w, err = s.st.Bind(tx); err == nil {
			sess, err = w.Session(sid)
		}
	} else {
		sess, err = s.st.Session(context.Background(), sid)
	}
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrBadID):
		return nil, nil // no session of this agent: nothing of one to seal
	case err != nil:
		return nil, fmt.Errorf("uplink: the data class of session %s: %w", sid, err)
	case !store.SealedClass(sess.DataClass):
		return nil, nil
	}
	k := s.st.AtRest()
	if k == nil {
		return nil, fmt.Errorf("uplink: a message of %s session %s is sealed at rest: %w", sess.DataClass, sid, atrest.ErrNoKey)
	}
	return k.Seal(m.Body, atrest.MessageBinding(sid, m.MessageID))
}

// OpenBody implements outbox.Sealer.
func (s sealer) OpenBody(m *outbox.Message) ([]byte, error) {
	k := s.st.AtRest()
	if k == nil {
		return nil, fmt.Errorf("uplink: a message of session %s is sealed at rest: %w", m.CorrelationID, atrest.ErrNoKey)
	}
	return k.Open(m.Body, atrest.MessageBinding(m.CorrelationID, m.MessageID))
}
