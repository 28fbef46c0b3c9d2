package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/store"
)

func viewOf(r store.AccessRequest) reply.Access {
	return reply.Access{ID: r.ID, SessionID: r.SessionID, CallerID: r.CallerID, DataClass: r.DataClass, What: r.What,
		State: string(r.State), CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Operator: r.Operator, Reason: r.Reason,
		DecidedAt: r.DecidedAt, ValidUntil: r.ValidUntil, Approvals: r.Approvals,
		WithdrawnAt: r.WithdrawnAt, WithdrawnBy: r.WithdrawnBy, WithdrawReason: r.WithdrawReason}
}

// access serves access_list, access_approve and access_deny.
func (s *sessions) access(ctx context.Context, req control.Request) (any, error) {
	if s.eng == nil {
		return nil, errors.New("no session engine runs")
	}
	switch req.Op {
	case control.OpAccessList:
		rs, err := s.eng.AccessRequests(ctx, !req.All)
		if err != nil {
			return nil, err
		}
		out := make([]reply.Access, 0, len(rs))
		for _, r := range rs {
			out = append(out, viewOf(r))
		}
		return out, nil
	case control.OpAccessApprove:
		var d time.Duration
		if req.For != "" {
			var err error
			if d, err = time.ParseDuration(req.For); err != nil || d <= 0 {
				return nil, fmt.Errorf("for %q: a positive duration such as 2h or 30m", req.For)
			}
		}
		r, err := s.eng.ApproveAccessAs(ctx, req.ID, signerOf(ctx, req.Operator), d)
		if err != nil {
			return nil, err
		}
		s.log.Warn("access approved", "access_id", r.ID, "session", r.SessionID, "operator", req.Operator, "state", r.State,
			"signatures", len(r.Approvals), "valid_until", r.ValidUntil)
		return viewOf(r), nil
	case control.OpAccessWithdraw:
		if req.Reason == "" {
			return nil, errors.New("access_withdraw needs a reason (--reason TEXT)")
		}
		r, err := s.eng.WithdrawAccess(ctx, req.ID, signerOf(ctx, req.Operator), req.Reason)
		if err != nil {
			return nil, err
		}
		s.log.Warn("access withdrawn", "access_id", r.ID, "session", r.SessionID, "operator", req.Operator, "reason", req.Reason)
		return viewOf(r), nil
	case control.OpAccessDeny:
		if req.Reason == "" {
			return nil, errors.New("access_deny needs a reason (--reason TEXT: the caller reads it)")
		}
		r, err := s.eng.DenyAccess(ctx, req.ID, req.Operator, req.Reason)
		if err != nil {
			return nil, err
		}
		s.log.Warn("access denied", "access_id", r.ID, "session", r.SessionID, "operator", req.Operator, "reason", req.Reason)
		return viewOf(r), nil
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}
