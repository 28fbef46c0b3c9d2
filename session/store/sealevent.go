package store

import (
	"encoding/json"
	"fmt"

	"hcp-edge/session/atrest"
	"hcp-edge/session/lifecycle"
)

// SealedClass reports whether the data of a session of classification
// class (Session.DataClass) is sealed at rest: T3 and T4 (L3's data
// classification asks for encryption at rest from T3 on).
func SealedClass(class string) bool { return class == "T3" || class == "T4" }

// SetAtRest gives the store the agent's at-rest key: from then on the data
// of every event of a T3/T4 session (SealedClass) is sealed under it when
// it is written, and opened with it when it is read (Events). Without a
// key, a write of such an event fails with atrest.ErrNoKey: nothing of a
// T3/T4 session is stored in the clear. Call it before any write, as
// SetQueue.
func (s *Store) SetAtRest(k *atrest.Key) { s.key = k }

// AtRest returns the key given to SetAtRest (nil: none).
func (s *Store) AtRest() *atrest.Key { return s.key }

// sealEvent returns e as it is stored for session sid: e itself for a
// session whose data is not sealed (k == nil), else its data sealed under
// k (bound to the session and the sequence number) and its Frame.
func sealEvent(sid string, k *atrest.Key, e Event) (Event, error) {
	if k == nil {
		return e, nil
	}
	frame, err := eventFrame(e)
	if err != nil {
		return Event{}, fmt.Errorf("store: session %s: event %d: %w", sid, e.Seq, err)
	}
	data, err := k.Seal(e.Data, atrest.EventBinding(sid, e.Seq))
	if err != nil {
		return Event{}, fmt.Errorf("store: session %s: seal event %d: %w", sid, e.Seq, err)
	}
	e.Data, e.Sealed, e.Frame = data, true, frame
	return e, nil
}

// sealKey is the key the events of sess are sealed under: nil when its
// data is not sealed, atrest.ErrNoKey when it is and the store has none.
func (s *Store) sealKey(sess Session) (*atrest.Key, error) {
	if !SealedClass(sess.DataClass) {
		return nil, nil
	}
	if s.key == nil {
		return nil, fmt.Errorf("store: session %s is %s: its events are sealed at rest: %w", sess.ID, sess.DataClass, atrest.ErrNoKey)
	}
	return s.key, nil
}

// frameClosed and frameCheckpoint are the Frames of session_closed and
// checkpoint_created; state_changed's is a lifecycle.StateChanged.
type frameClosed struct {
	FinalState lifecycle.State `json:"final_state"`
}

type frameCheckpoint struct {
	ID string `json:"checkpoint_id"`
}

// eventFrame is the Frame of e (nil for an event Check does not replay).
func eventFrame(e Event) ([]byte, error) {
	var f any
	switch e.Type {
	case lifecycle.EventStateChanged:
		var sc lifecycle.StateChanged
		if err := json.Unmarshal(e.Data, &sc); err != nil {
			return nil, err
		}
		if sc.Reason != lifecycle.ReasonRecovered {
			sc.Reason = ""
		}
		f = sc
	case lifecycle.EventSessionClosed:
		var sc lifecycle.SessionClosed
		if err := json.Unmarshal(e.Data, &sc); err != nil {
			return nil, err
		}
		f = frameClosed{FinalState: sc.FinalState}
	case lifecycle.EventCheckpointCreated:
		var d checkpointData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return nil, err
		}
		f = frameCheckpoint{ID: d.ID}
	default:
		return nil, nil
	}
	return json.Marshal(f)
}

// checkData is what Check reads of e: its Frame when it is sealed, its
// data otherwise.
func (e Event) checkData() []byte {
	if e.Sealed {
		return e.Frame
	}
	return e.Data
}

// Open returns the data of e, an event of session sessionID: as stored, or
// opened with k when it is sealed — atrest.ErrNoKey without a key,
// *atrest.WrongKeyError for another key, atrest.ErrTampered for data
// altered or taken from another session or event.
func (e Event) Open(sessionID string, k *atrest.Key) ([]byte, error) {
	if !e.Sealed {
		return e.Data, nil
	}
	if k == nil {
		return nil, fmt.Errorf("store: session %s: event %d is sealed: %w", sessionID, e.Seq, atrest.ErrNoKey)
	}
	p, err := k.Open(e.Data, atrest.EventBinding(sessionID, e.Seq))
	if err != nil {
		return nil, fmt.Errorf("store: session %s: event %d: %w", sessionID, e.Seq, err)
	}
	return p, nil
}

// WithoutKey tells the Tx that its caller holds no at-rest key for session
// sid, a T3/T4 session, so that nothing it writes for sid in this
// transaction holds data of the session (that data is sealed and cannot be
// opened here): its events are stored in the clear when the store has no
// key (sealed as always when it has one), and the messages Send is given
// for it are marked Unsealed. The engine calls it only to end, reject or
// abort a T3/T4 session it recovered without the key.
func (w *Tx) WithoutKey(sid string) {
	if w.keyless == nil {
		w.keyless = map[string]bool{}
	}
	w.keyless[sid] = true
}
