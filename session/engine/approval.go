package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// Meanings of a signature (21 CFR Part 11: a signature carries its
// meaning).
const (
	MeaningExecution = "approved for execution"
	MeaningReleased  = "released until" // followed by the time
)

// ErrSameApprover: a signer who has approved already approves again. The
// two-person rule needs different OS users.
var ErrSameApprover = errors.New("engine: the same signer may not approve twice")

// Signer is who approves: the OS user the kernel reported for the
// request (Known) and the display name it used. A signer without a known
// OS user (Approve, the engine's older entry point) is told apart from
// others by the display name alone.
type Signer struct {
	UID     uint32 `json:"uid"`
	User    string `json:"user,omitempty"` // the OS user name
	Display string `json:"display"`
	Known   bool   `json:"os_user_known"`
}

// key is what tells two signers apart: the uid when known.
func (s Signer) key() string {
	if s.Known {
		return "uid:" + strconv.FormatUint(uint64(s.UID), 10)
	}
	return "name:" + s.Display
}

// String is "DISPLAY (uid N USER)", or the display name alone.
func (s Signer) String() string {
	if !s.Known {
		return s.Display
	}
	return fmt.Sprintf("%s (uid %d %s)", s.Display, s.UID, s.User)
}

// Signature is one approval: who, when and what it means.
type Signature struct {
	Signer
	At      time.Time `json:"at"`
	Meaning string    `json:"meaning"`
}

// Approvals is where a pending session's approval stands after an
// approval: Have of Need signatures (Have == Need: it runs).
type Approvals struct {
	Have, Need int
	Signatures []Signature
}

// signatureAudit is the detail of the audit entry of each signature (kind
// approval).
type signatureAudit struct {
	Decision   string `json:"decision"` // approval_signed
	ApprovalID string `json:"approval_id,omitempty"`
	AccessID   string `json:"access_id,omitempty"`
	RiskLevel  string `json:"risk_level,omitempty"`
	Operator   string `json:"operator"`
	UID        uint32 `json:"uid"`
	User       string `json:"user,omitempty"`
	OSUser     bool   `json:"os_user_known"`
	At         string `json:"at"`
	Meaning    string `json:"meaning"`
	Count      int    `json:"signature"` // this signature's number, from 1
	Required   int    `json:"required"`
}

func (g Signature) audit(n, need int) signatureAudit {
	return signatureAudit{Decision: "approval_signed", Operator: g.Display, UID: g.UID, User: g.User, OSUser: g.Known,
		At: g.At.UTC().Format(wire.TimestampLayout), Meaning: g.Meaning, Count: n, Required: need}
}

// approvalsFor is the number of signatures key (a risk level, or "T4")
// needs: Config.ApprovalsRequired, at least 1.
func (e *Engine) approvalsFor(key string) int {
	return max(e.cfg.ApprovalsRequired[key], 1)
}

// ApproveAs is Approve with the signer's OS identity: the signature (who,
// when, "approved for execution") is audited and kept with the session.
// A session whose risk level needs more signatures than it has stays
// PENDING (the signature stored in the same transaction as its audit
// entry); the last one starts it as Approve does. The same signer twice
// is refused (ErrSameApprover) and changes nothing.
func (e *Engine) ApproveAs(ctx context.Context, id string, s Signer) (Approvals, error) {
	if s.Display == "" {
		return Approvals{}, errors.New("engine: approve needs the operator's name")
	}
	l := e.get(id)
	if l == nil {
		return Approvals{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	l.mu.Lock()
	if l.state != lifecycle.Pending || !l.meta.NeedApproval {
		st := l.state
		l.mu.Unlock()
		return Approvals{}, fmt.Errorf("%w: approval in %s", ErrState, st)
	}
	need := e.approvalsFor(l.sess.RiskLevel)
	for _, g := range l.meta.Approvals {
		if g.key() == s.key() {
			l.mu.Unlock()
			return Approvals{Have: len(l.meta.Approvals), Need: need, Signatures: slices.Clone(l.meta.Approvals)},
				fmt.Errorf("%w: %s approved session %s at %s already; risk %s needs %d different OS users",
					ErrSameApprover, g.Signer, l.id, g.At.UTC().Format(time.RFC3339), l.sess.RiskLevel, need)
		}
	}
	sig := Signature{Signer: s, At: e.cfg.Now().UTC(), Meaning: MeaningExecution}
	all := append(slices.Clone(l.meta.Approvals), sig)
	det := sig.audit(len(all), need)
	det.ApprovalID, det.RiskLevel = l.meta.ApprovalID, l.sess.RiskLevel
	if len(all) < need {
		m := l.meta
		m.Approvals = all
		mb, err := json.Marshal(m)
		if err == nil {
			err = e.cfg.Store.Update(ctx, func(w *store.Tx) error {
				if _, err := w.SetMetadata(l.id, mb); err != nil {
					return err
				}
				return auditJSON(ctx, w, l.id, det)
			})
		}
		if err == nil {
			l.meta = m
		}
		l.mu.Unlock()
		if err != nil {
			return Approvals{}, fmt.Errorf("engine: approval of %s: %w", l.id, err)
		}
		return Approvals{Have: len(all), Need: need, Signatures: all}, nil
	}
	l.mu.Unlock()
	if err := e.resolveSigned(ctx, l, s.Display, all, det); err != nil {
		return Approvals{}, err
	}
	return Approvals{Have: len(all), Need: need, Signatures: all}, nil
}

func auditJSON(ctx context.Context, w *store.Tx, sid string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Audit(ctx, audit.Entry{SessionID: sid, Kind: audit.KindApproval, Detail: string(b)})
	return err
}

// SessionOf is the session id of a live session given its id or its
// pending approval's id; "" when the engine holds none.
func (e *Engine) SessionOf(id string) string {
	if l := e.get(id); l != nil {
		return l.id
	}
	return ""
}
