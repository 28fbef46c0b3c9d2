package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
)

// bucketOwnership holds the ownership chains: one nested bucket per
// session id; big-endian index (from 1) → Ownership (JSON). A session that
// never changed owner has none.
var bucketOwnership = []byte("ownership")

// Errors of Transfer. Each leaves the state file unchanged.
var (
	// ErrEnded: the session is in a terminal state; its owner is final.
	ErrEnded = errors.New("session has ended")
	// ErrNotOwner: Ownership.From is not the session's current owner.
	ErrNotOwner = errors.New("not the session's owner")
)

// Ownership is one record of a session's ownership chain (Loops contract
// 4): the session's owner (Session.CallerID, who receives its messages and
// may control it) went From → To at At, asked By (a broker-verified caller
// id, or an operator's name) Via handoff, takeover or handback. The chain
// is append-only; its first record's From is the submitting caller.
type Ownership struct {
	Index     int       `json:"index"` // place in the chain, from 1
	SessionID string    `json:"session_id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	By        string    `json:"by"`
	Via       string    `json:"via"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id,omitempty"` // message_id of the session_handoff
	Seq       uint64    `json:"seq"`                  // sequence number of the event that announced it
}

// ownershipAudit is the detail of an ownership audit entry.
type ownershipAudit struct {
	Decision  string `json:"decision"` // ownership_changed
	Index     int    `json:"index"`
	From      string `json:"from"`
	To        string `json:"to"`
	By        string `json:"by"`
	Via       string `json:"via"`
	Reason    string `json:"reason,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Seq       uint64 `json:"seq"`
}

// Transfer moves session id's ownership From → To inside this transaction:
// events (the announcement; at least one) are numbered and stored, the
// session's CallerID becomes To, the record is appended to the chain with
// the sequence number of the first event and audited (audit.KindOwnership),
// all or nothing. A session that has ended (ErrEnded) or whose owner is
// not From (ErrNotOwner) changes nothing. rec's Index, SessionID, At (when
// zero) and Seq are set here; it returns the stored record.
func (w *Tx) Transfer(id string, rec Ownership, events ...Emit) (Ownership, Session, []Event, error) {
	if rec.From == "" || rec.To == "" || rec.By == "" || rec.Via == "" {
		return Ownership{}, Session{}, nil, fmt.Errorf("store: transfer of %s: From, To, By and Via are required", id)
	}
	if len(events) == 0 {
		return Ownership{}, Session{}, nil, fmt.Errorf("store: transfer of %s: no event announces it", id)
	}
	t, err := w.update(id, func(t *txn) error {
		switch {
		case t.m.State.Terminal():
			return fmt.Errorf("store: session %s is %s: %w", id, t.m.State, ErrEnded)
		case t.sess.CallerID != rec.From:
			return fmt.Errorf("store: session %s is owned by %s, not %s: %w", id, t.sess.CallerID, rec.From, ErrNotOwner)
		}
		chain, err := ownershipChain(t.tx, id)
		if err != nil {
			return err
		}
		rec.Index, rec.SessionID, rec.Seq = len(chain)+1, id, t.m.LastSeq+1
		if rec.At.IsZero() {
			rec.At = t.now
		}
		if err := t.emit(events); err != nil {
			return err
		}
		t.sess.CallerID = rec.To
		ob, err := t.tx.CreateBucketIfNotExists(bucketOwnership)
		if err != nil {
			return fmt.Errorf("store: create bucket %s: %w", bucketOwnership, err)
		}
		sb, err := ob.CreateBucketIfNotExists([]byte(id))
		if err != nil {
			return fmt.Errorf("store: ownership of %s: %w", id, err)
		}
		v, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("store: encode ownership of %s: %w", id, err)
		}
		if err := sb.Put(indexKey(rec.Index), v); err != nil {
			return fmt.Errorf("store: put ownership %d of %s: %w", rec.Index, id, err)
		}
		d, err := json.Marshal(ownershipAudit{Decision: "ownership_changed", Index: rec.Index, From: rec.From, To: rec.To,
			By: rec.By, Via: rec.Via, Reason: rec.Reason, RequestID: rec.RequestID, Seq: rec.Seq})
		if err != nil {
			return fmt.Errorf("store: audit detail: %w", err)
		}
		_, err = audit.AppendTx(t.tx, audit.Entry{At: t.now, SessionID: id, Kind: audit.KindOwnership, Detail: string(d)})
		return err
	})
	if err != nil {
		return Ownership{}, Session{}, nil, err
	}
	return rec, t.sess, t.events, nil
}

// Ownership returns session id's ownership chain as of this transaction,
// oldest first (none: the submitting caller still owns it).
func (w *Tx) Ownership(id string) ([]Ownership, error) { return ownershipChain(w.tx, id) }

// Ownership returns session id's ownership chain, oldest first (none: the
// submitting caller still owns it); ErrNotFound for an unknown session.
func (s *Store) Ownership(ctx context.Context, id string) ([]Ownership, error) {
	var out []Ownership
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSessions).Get([]byte(id)) == nil {
			return fmt.Errorf("store: session %s: %w", id, ErrNotFound)
		}
		var err error
		out, err = ownershipChain(tx, id)
		return err
	})
	return out, err
}

func ownershipChain(tx *bolt.Tx, id string) ([]Ownership, error) {
	ob := tx.Bucket(bucketOwnership)
	if ob == nil {
		return nil, nil
	}
	sb := ob.Bucket([]byte(id))
	if sb == nil {
		return nil, nil
	}
	var out []Ownership
	err := sb.ForEach(func(k, v []byte) error {
		var r Ownership
		if err := json.Unmarshal(v, &r); err != nil {
			return &CorruptError{Session: id, Reason: fmt.Sprintf("ownership record %x: %v", k, err)}
		}
		if r.Index != len(out)+1 {
			return &CorruptError{Session: id, Reason: fmt.Sprintf("ownership record %d where %d belongs", r.Index, len(out)+1)}
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func indexKey(i int) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(i))
	return k[:]
}

// checkOwnership verifies sess's ownership chain (Check): consecutive
// indexes, each record's From the previous record's To, and the last To
// the session's owner.
func checkOwnership(tx *bolt.Tx, sess Session) error {
	chain, err := ownershipChain(tx, sess.ID)
	if err != nil || len(chain) == 0 {
		return err
	}
	for i := 1; i < len(chain); i++ {
		if chain[i].From != chain[i-1].To {
			return &CorruptError{Session: sess.ID, Reason: fmt.Sprintf("ownership record %d is from %s, record %d gave it to %s",
				chain[i].Index, chain[i].From, chain[i-1].Index, chain[i-1].To)}
		}
	}
	if last := chain[len(chain)-1]; last.To != sess.CallerID {
		return &CorruptError{Session: sess.ID, Reason: fmt.Sprintf("owned by %s, its ownership chain ends with %s", sess.CallerID, last.To)}
	}
	return nil
}
