package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Buckets of the access requests.
var (
	bucketAccess         = []byte("access")          // access id → AccessRequest (JSON)
	bucketAccessSessions = []byte("access_sessions") // session id → access id
)

// AccessState is where an access request stands.
type AccessState string

// The states of an access request: pending until an operator decides (or
// its expiry denies it), then approved or denied, for good.
const (
	AccessPending  AccessState = "pending"
	AccessApproved AccessState = "approved"
	AccessDenied   AccessState = "denied"
)

// AccessRequest is the request for access to the results of one T4
// session (L3: "access approval"): made when the session ends, it holds
// the session's final message (task_completed or task_failed, with the
// outputs and the artifact list) until an operator approves or denies it.
// An approval also opens the session's data to local reads (artifact get)
// until ValidUntil.
type AccessRequest struct {
	ID        string      `json:"id"` // acc-xxxxxxxx
	SessionID string      `json:"session_id"`
	CallerID  string      `json:"caller_id"`           // who receives the held message
	DataClass string      `json:"data_classification"` // T4
	What      string      `json:"what"`                // what is held, for the operator
	FinalType string      `json:"final_type"`          // the held message's type
	State     AccessState `json:"state"`
	CreatedAt time.Time   `json:"created_at"`
	ExpiresAt time.Time   `json:"expires_at"` // a pending request is denied at this time
	Operator  string      `json:"operator,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	DecidedAt time.Time   `json:"decided_at,omitzero"`
	// ValidUntil is the end of an approval: local reads of the session's
	// data need it in the future.
	ValidUntil time.Time `json:"valid_until,omitzero"`
	// Held is the held final message, sealed by the engine under the
	// at-rest key (opaque here); empty once released.
	Held []byte `json:"held,omitempty"`
	// WithdrawnAt, WithdrawnBy and WithdrawReason record a release ended
	// early (hcp-edge access withdraw): ValidUntil is then the withdrawal's
	// time, so local reads are refused from it on.
	WithdrawnAt    time.Time `json:"withdrawn_at,omitzero"`
	WithdrawnBy    string    `json:"withdrawn_by,omitempty"`
	WithdrawReason string    `json:"withdraw_reason,omitempty"`
	// Approvals are the signatures gathered, oldest first: a request that
	// needs several (the two-person rule) stays pending until it has them.
	Approvals []AccessSignature `json:"approvals,omitempty"`
}

// AccessSignature is one operator's approval of an access request: who
// (the OS user the kernel reported, when known, and the display name),
// when, and what it means.
type AccessSignature struct {
	Operator string    `json:"operator"`
	UID      uint32    `json:"uid"`
	User     string    `json:"user,omitempty"`
	OSUser   bool      `json:"os_user_known"`
	At       time.Time `json:"at"`
	Meaning  string    `json:"meaning"`
}

// PutAccess stores r in this transaction: a new request (its session must
// exist and have none yet: ErrExists) or a decision on an existing one.
func (w *Tx) PutAccess(r AccessRequest) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if err := checkID(r.SessionID); err != nil {
		return err
	}
	if w.tx.Bucket(bucketSessions).Get([]byte(r.SessionID)) == nil {
		return fmt.Errorf("store: access request %s: session %s: %w", r.ID, r.SessionID, ErrNotFound)
	}
	switch r.State {
	case AccessPending, AccessApproved, AccessDenied:
	default:
		return fmt.Errorf("store: access request %s: state %q", r.ID, r.State)
	}
	ab, err := w.tx.CreateBucketIfNotExists(bucketAccess)
	if err != nil {
		return fmt.Errorf("store: create bucket %s: %w", bucketAccess, err)
	}
	ib, err := w.tx.CreateBucketIfNotExists(bucketAccessSessions)
	if err != nil {
		return fmt.Errorf("store: create bucket %s: %w", bucketAccessSessions, err)
	}
	have := ib.Get([]byte(r.SessionID))
	switch {
	case have == nil && ab.Get([]byte(r.ID)) != nil:
		return fmt.Errorf("store: access request %s: %w", r.ID, ErrExists)
	case have != nil && string(have) != r.ID:
		return fmt.Errorf("store: session %s already has access request %s: %w", r.SessionID, have, ErrExists)
	}
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("store: encode access request %s: %w", r.ID, err)
	}
	if err := ab.Put([]byte(r.ID), v); err != nil {
		return fmt.Errorf("store: put access request %s: %w", r.ID, err)
	}
	return ib.Put([]byte(r.SessionID), []byte(r.ID))
}

// Access returns the access request id names (its access id, or the id of
// its session) as of this transaction; ErrNoAccess when there is none.
func (w *Tx) Access(id string) (AccessRequest, error) { return getAccess(w.tx, id) }

// Access returns the access request id names (its access id, or the id of
// its session); ErrNoAccess when there is none.
func (s *Store) Access(ctx context.Context, id string) (AccessRequest, error) {
	var r AccessRequest
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		r, err = getAccess(tx, id)
		return err
	})
	return r, err
}

// AccessRequests returns every access request, oldest first; with
// pendingOnly, those still waiting for a decision.
func (s *Store) AccessRequests(ctx context.Context, pendingOnly bool) ([]AccessRequest, error) {
	var out []AccessRequest
	err := s.view(ctx, func(tx *bolt.Tx) error {
		ab := tx.Bucket(bucketAccess)
		if ab == nil {
			return nil
		}
		return ab.ForEach(func(k, v []byte) error {
			var r AccessRequest
			if err := json.Unmarshal(v, &r); err != nil {
				return &CorruptError{Reason: fmt.Sprintf("access request %s: %v", k, err)}
			}
			if !pendingOnly || r.State == AccessPending {
				out = append(out, r)
			}
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b AccessRequest) int { return a.CreatedAt.Compare(b.CreatedAt) }(out[i], out[j]) < 0
	})
	return out, err
}

func getAccess(tx *bolt.Tx, id string) (AccessRequest, error) {
	if id == "" || len(id) > MaxIDLen {
		return AccessRequest{}, fmt.Errorf("store: access request %q: %w", id, ErrNoAccess)
	}
	ab := tx.Bucket(bucketAccess)
	if ab == nil {
		return AccessRequest{}, fmt.Errorf("store: access request %s: %w", id, ErrNoAccess)
	}
	v := ab.Get([]byte(id))
	if v == nil {
		if ib := tx.Bucket(bucketAccessSessions); ib != nil {
			if aid := ib.Get([]byte(id)); aid != nil {
				v = ab.Get(aid)
			}
		}
	}
	if v == nil {
		return AccessRequest{}, fmt.Errorf("store: access request %s: %w", id, ErrNoAccess)
	}
	var r AccessRequest
	if err := json.Unmarshal(v, &r); err != nil {
		return AccessRequest{}, &CorruptError{Reason: fmt.Sprintf("access request %s: %v", id, err)}
	}
	return r, nil
}
