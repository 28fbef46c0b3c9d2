package agent

import (
	"context"
	"fmt"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/store"
)

// ownershipOp serves takeover, handback and ownership on the control
// socket: the technician at the rig takes a session over (its harness's
// remote control is refused until handback), gives it back, or reads the
// chain.
func (s *sessions) ownershipOp(ctx context.Context, req control.Request) (any, error) {
	if req.ID == "" {
		return nil, fmt.Errorf("%s needs a session id", req.Op)
	}
	var msg string
	switch req.Op {
	case control.OpTakeover:
		rec, err := s.eng.Takeover(ctx, req.ID, req.Operator, req.Reason)
		if err != nil {
			return nil, err
		}
		msg = fmt.Sprintf("%s: taken over by %s from %s; events stay on this rig and %s's control is refused until hcp-edge handback",
			req.ID, req.Operator, rec.From, rec.From)
	case control.OpHandback:
		rec, err := s.eng.Handback(ctx, req.ID, req.Operator, req.Reason)
		if err != nil {
			return nil, err
		}
		msg = fmt.Sprintf("%s: handed back to %s by %s", req.ID, rec.To, req.Operator)
	case control.OpOwnership:
	default:
		return nil, fmt.Errorf("unknown op %q", req.Op)
	}
	chain, owner, err := s.eng.Ownership(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if chain == nil {
		chain = []store.Ownership{}
	}
	if msg != "" {
		s.log.Warn("session "+req.Op, "id", req.ID, "operator", req.Operator, "reason", req.Reason, "owner", owner)
	}
	return reply.Ownership{Message: msg, Session: req.ID, Owner: owner, Chain: chain}, nil
}
