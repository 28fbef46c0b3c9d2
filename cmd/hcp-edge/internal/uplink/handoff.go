package uplink

import (
	"context"
	"errors"

	"hcp-edge/session/engine"
	tamqp "hcp-edge/transport/amqp"
)

// handoff handles a session_handoff (docs/PROTOCOL-NOTES.md): the
// broker-verified caller (cmd.MappedCallerID, never a field of the
// message) hands its session to payload.to. The engine records, audits
// and announces it (ownership_changed to both owners) in its own
// transaction, or audits a refusal and answers it with task_rejected; the
// inbox then records the message_id, and a redelivery already done is not
// done twice (the chain keeps the message_id). Only a store failure is an
// error (the command is requeued once).
func (u *Uplink) handoff(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	sid := cmd.Envelope.SessionID.String()
	p, err := cmd.Envelope.SessionHandoff()
	if err != nil { // the inbox decoded it; unreachable
		u.log.Warn("session_handoff refused", "session", sid, "user", cmd.UserID, "err", err)
		return tamqp.Outcome{}, nil
	}
	rec, err := u.eng.Handoff(ctx, engine.HandoffRequest{SessionID: sid, By: cmd.MappedCallerID, To: p.To, Reason: p.Reason,
		RequestID: cmd.Envelope.MessageID.String()})
	switch {
	case err == nil:
		u.log.Warn("session handed off", "session", sid, "user", cmd.UserID, "from", rec.From, "to", rec.To, "index", rec.Index)
		return tamqp.Outcome{}, nil
	case engine.IsRefusal(err):
		u.log.Warn("session_handoff refused", "session", sid, "user", cmd.UserID, "caller", cmd.MappedCallerID, "to", p.To,
			"code", engine.RefusalCode(err), "err", err)
		return tamqp.Outcome{}, nil
	}
	return tamqp.Outcome{}, err
}

// refuseControl refuses control command action (abort) of a session by a
// caller that does not own it: the engine audits the refusal and answers a
// former owner (read-only history) with task_rejected forbidden; a
// stranger's command is only audited and logged.
func (u *Uplink) refuseControl(ctx context.Context, cmd tamqp.Command, action string) error {
	sid := cmd.Envelope.SessionID.String()
	err := u.eng.AuthorizeControl(ctx, sid, cmd.MappedCallerID, action, cmd.Envelope.MessageID.String())
	switch {
	case err == nil: // handed to this caller meanwhile: it asked before it owned the session
		u.log.Warn(action+" ignored: sent before the caller owned the session", "session", sid, "user", cmd.UserID, "caller", cmd.MappedCallerID)
		return nil
	case engine.IsRefusal(err) || errors.Is(err, engine.ErrNotFound):
		u.log.Warn(action+" refused: not the session's owner", "session", sid, "user", cmd.UserID, "caller", cmd.MappedCallerID, "err", err)
		return nil
	}
	return err
}
