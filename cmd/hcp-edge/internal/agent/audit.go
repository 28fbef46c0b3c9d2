package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/audit"
	"hcp-edge/session/engine"
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
	case control.OpAuditLog:
		var q auditaccess.LogQuery
		if len(req.Query) > 0 {
			if err := json.Unmarshal(req.Query, &q); err != nil {
				return nil, fmt.Errorf("audit_log: query: %w", err)
			}
		}
		return auditaccess.Log(ctx, s.st, q, auditaccess.ViaDaemon, path)
	case control.OpAuditReport:
		var q auditaccess.ReportQuery
		if err := json.Unmarshal(req.Query, &q); err != nil {
			return nil, fmt.Errorf("audit_report: query: %w", err)
		}
		return auditaccess.Report(ctx, s.st, q, auditaccess.ViaDaemon, path)
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
				s.refusedRead(ctx, sid, sess.DataClass, req, err)
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
			s.refusedRead(ctx, a.SessionID, a.DataClass, req, err)
			return nil, err
		}
		return a, nil
	}
	if err := auditaccess.Record(ctx, s.st, a.SessionID, "artifact_get", a.URI, auditaccess.Accessor{Operator: req.Operator, Via: "control socket"}); err != nil {
		return nil, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	return a, nil
}

// refusedRead audits a refused local read of a T4 session's data (kind
// data_access, with the reader's OS user): who tried to read what, and
// why it was refused. A failure to record is logged; the read stays
// refused.
func (s *sessions) refusedRead(ctx context.Context, sid, class string, req control.Request, why error) {
	d := struct {
		Operator  string `json:"operator"`
		UID       uint32 `json:"uid"`
		User      string `json:"user"`
		Access    string `json:"access"`
		Object    string `json:"object"`
		Via       string `json:"via"`
		DataClass string `json:"data_classification"`
		Refused   string `json:"refused"`
	}{Operator: req.Operator, Access: "artifact_get", Object: req.URI, Via: "control socket", DataClass: class, Refused: why.Error()}
	if id, ok := identityOf(ctx); ok {
		d.UID, d.User = id.UID, id.User
	}
	b, _ := json.Marshal(d)
	if _, err := s.st.Audit().Append(context.WithoutCancel(ctx), audit.Entry{SessionID: sid, Kind: audit.KindDataAccess, Detail: string(b)}); err != nil {
		s.log.Error("refused read not recorded in the audit log", "session", sid, "err", err)
	}
}
