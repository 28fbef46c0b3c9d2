package store

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// This file holds what session/retention needs of the store: the removal
// of one closed session's records. It is additive: nothing else in the
// package calls it.

// Errors of Tx.Remove (kept beside it). Each leaves the file unchanged.
var (
	// ErrNotClosed: the session is not in a terminal state; running,
	// paused and pending sessions are never removed.
	ErrNotClosed = errors.New("session not closed")
	// ErrAccessPending: the session's access request (T4) still holds its
	// final message for an operator's decision.
	ErrAccessPending = errors.New("session's access request pending")
)

// Removed says what Tx.Remove deleted of one session.
type Removed struct {
	Events      int   `json:"events"`      // event records
	Checkpoints int   `json:"checkpoints"` // checkpoint records
	Ownership   int   `json:"ownership"`   // ownership chain records
	Access      bool  `json:"access"`      // its access request (decided)
	Bytes       int64 `json:"bytes"`       // bytes of keys and values deleted
}

// Remove deletes closed session id inside this transaction: its record,
// its events, its checkpoints, its ownership chain and its decided access
// request. The audit log is not touched (its entries, and the index of
// the session's entries, stay: the chain is kept whole and `audit
// replay` still shows what the session did). A session that is not
// terminal is refused with ErrNotClosed, one whose access request is
// pending with ErrAccessPending, an unknown one with ErrNotFound.
//
// It deletes whole nested buckets, so its cost grows with the pages the
// session used, not with a scan of the file.
func (w *Tx) Remove(id string) (Removed, error) {
	var out Removed
	if err := checkID(id); err != nil {
		return out, err
	}
	tx, key := w.tx, []byte(id)
	v := tx.Bucket(bucketSessions).Get(key)
	if v == nil {
		return out, fmt.Errorf("store: remove %s: %w", id, ErrNotFound)
	}
	var sess Session
	if _, err := sess.UnmarshalMsg(v); err != nil {
		return out, &CorruptError{Session: id, Reason: "session record: " + err.Error()}
	}
	if !sess.State.Terminal() {
		return out, fmt.Errorf("store: remove %s (%s): %w", id, sess.State, ErrNotClosed)
	}
	if ib := tx.Bucket(bucketAccessSessions); ib != nil {
		if aid := ib.Get(key); aid != nil {
			r, err := getAccess(tx, string(aid))
			if err != nil && !errors.Is(err, ErrNoAccess) {
				return out, err
			}
			if err == nil && r.State == AccessPending {
				return out, fmt.Errorf("store: remove %s: access request %s: %w", id, r.ID, ErrAccessPending)
			}
			if ab := tx.Bucket(bucketAccess); ab != nil && ab.Get(aid) != nil {
				out.Bytes += int64(len(aid) + len(ab.Get(aid)))
				if err := ab.Delete(aid); err != nil {
					return out, fmt.Errorf("store: remove %s: access request: %w", id, err)
				}
				out.Access = true
			}
			out.Bytes += int64(len(key) + len(aid))
			if err := ib.Delete(key); err != nil {
				return out, fmt.Errorf("store: remove %s: access index: %w", id, err)
			}
		}
	}
	nested := []struct {
		parent []byte
		n      *int
	}{{bucketEvents, &out.Events}, {bucketCheckpoints, &out.Checkpoints}, {bucketOwnership, &out.Ownership}}
	for _, b := range nested {
		pb := tx.Bucket(b.parent)
		if pb == nil {
			continue
		}
		sb := pb.Bucket(key)
		if sb == nil {
			continue
		}
		err := sb.ForEach(func(k, v []byte) error {
			*b.n++
			out.Bytes += int64(len(k) + len(v))
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("store: remove %s: %s: %w", id, b.parent, err)
		}
		if err := pb.DeleteBucket(key); err != nil {
			return out, fmt.Errorf("store: remove %s: %s: %w", id, b.parent, err)
		}
	}
	out.Bytes += int64(len(key) + len(v))
	if err := tx.Bucket(bucketSessions).Delete(key); err != nil {
		return out, fmt.Errorf("store: remove %s: %w", id, err)
	}
	if ab := tx.Bucket(bucketActive); ab != nil && ab.Get(key) != nil {
		if err := ab.Delete(key); err != nil {
			return out, fmt.Errorf("store: remove %s: active: %w", id, err)
		}
	}
	return out, nil
}

// Closed returns every session in a terminal state, by id, in one read
// transaction (the candidates of retention).
func (s *Store) Closed(ctx context.Context) ([]Session, error) {
	var out []Session
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			var sess Session
			if _, err := sess.UnmarshalMsg(v); err != nil {
				return &CorruptError{Session: string(k), Reason: "session record: " + err.Error()}
			}
			if sess.State.Terminal() {
				sess.Token, sess.Metadata = "", nil // not needed to judge retention
				out = append(out, sess)
			}
			return nil
		})
	})
	return out, err
}
