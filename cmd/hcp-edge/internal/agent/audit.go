package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/control"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/reply"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/session/engine"
)

// auditOp serves audit_verify and audit_replay on the daemon's open log.
func (s *sessions) auditOp(ctx context.Context, req control.Request) (any, error) {
	path := filepath.Join(s.stateDir, rigconfig.StateFile)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	switch req.Op {
	case control.OpAuditVerify:
		return auditaccess.Verify(ctx, s.st.Audit(), auditaccess.ViaDaemon, path)
	case control.OpAuditReplay:
		if req.ID == "" {
			return nil, errors.New("audit_replay needs a session id")
		}
		r, err := auditaccess.Replay(ctx, s.st, req.ID, auditaccess.Accessor{Operator: req.Operator, Via: "control socket"}, auditaccess.ViaDaemon, path)
		if err != nil {
			return nil, err
		}
		s.log.Info("audit replay", "session", req.ID, "operator", req.Operator, "entries", len(r.Entries), "data_classification", r.DataClass)
		return r, nil
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}

// artifactAudited is artifact with the access recorded for a T2+ session.
//
// A T4 session's artifact needs an unexpired access approval (hcp-edge
// access approve): checked first, so that a refusal names what to run, and
// again in the transaction that audits the read.
func (s *sessions) artifactAudited(ctx context.Context, req control.Request) (any, error) {
	if sid, _, err := reply.ParseArtifactURI(req.URI); err == nil {
		if sess, err := s.st.Session(ctx, sid); err == nil && engine.NeedsAccessApproval(sess.DataClass) {
			if s.eng == nil {
				return nil, fmt.Errorf("session %s is %s and no session engine runs to check its access approval", sid, sess.DataClass)
			}
			if err := s.eng.CheckRead(ctx, sid, req.Operator, req.URI); err != nil {
				return nil, err
			}
		}
	}
	a, err := s.artifact(req.URI)
	if err != nil {
		return nil, err
	}
	if engine.NeedsAccessApproval(a.DataClass) {
		if s.eng == nil {
			return nil, fmt.Errorf("session %s is %s and no session engine runs to check its access approval", a.SessionID, a.DataClass)
		}
		if err := s.eng.ReadAccess(ctx, a.SessionID, req.Operator, "artifact_get", a.URI, "control socket"); err != nil {
			return nil, err
		}
		return a, nil
	}
	if err := auditaccess.Record(ctx, s.st, a.SessionID, "artifact_get", a.URI, auditaccess.Accessor{Operator: req.Operator, Via: "control socket"}); err != nil {
		return nil, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	return a, nil
}
