package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/control"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/export"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/reply"
	"github.com/hcp-edge/hcp-edge/session/engine"
)

// exportOp serves export: session req.ID's .eln archive, under the rules
// of an artifact fetch — a T4 session's needs an unexpired access approval
// (checked first, so that a refusal names what to run), and the export of
// a T2+ session is recorded as an access (kind data_access, access
// "export") before the archive is handed over.
func (s *sessions) exportOp(ctx context.Context, req control.Request) (any, error) {
	if req.ID == "" {
		return nil, errors.New("export needs a session id")
	}
	object := export.URI(req.ID)
	sess, err := s.st.Session(ctx, req.ID)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", req.ID, err)
	}
	t4 := engine.NeedsAccessApproval(sess.DataClass)
	if t4 {
		if s.eng == nil {
			return nil, fmt.Errorf("session %s is %s and no session engine runs to check its access approval", req.ID, sess.DataClass)
		}
		if err := s.eng.CheckRead(ctx, req.ID, req.Operator, object); err != nil {
			s.refusedRead(ctx, req.ID, sess.DataClass, control.Request{Operator: req.Operator, URI: object}, err)
			return nil, err
		}
	}
	data, err := export.Build(ctx, s.exportSource(), req.ID)
	if err != nil {
		return nil, err
	}
	if t4 {
		if err := s.eng.ReadAccess(ctx, req.ID, req.Operator, "export", object, "control socket"); err != nil {
			return nil, err
		}
	} else if err := auditaccess.Record(ctx, s.st, req.ID, "export", object, auditaccess.Accessor{Operator: req.Operator, Via: "control socket"}); err != nil {
		return nil, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	s.log.Info("session exported", "session", req.ID, "operator", req.Operator, "bytes", len(data), "data_classification", sess.DataClass)
	return reply.Export{SessionID: req.ID, Name: export.FileName(req.ID), Data: data}, nil
}

// exportSource is where the daemon's exports read.
func (s *sessions) exportSource() export.Source {
	src := export.Source{Store: s.st, StateDir: s.stateDir, Version: s.version, Instruments: export.InstrumentsOf(s.rig)}
	if s.eng != nil {
		src.Key = s.eng.AtRestKey()
	}
	return src
}
