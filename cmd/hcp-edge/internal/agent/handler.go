package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/clocksync"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/operators"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/safestate"
	"hcp-edge/cmd/hcp-edge/internal/uplink"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
)

// handler serves the control socket's operations.
type handler struct {
	up   *uplink.Uplink     // nil without a broker
	disk *diskspace.Watcher // the state directory's free space
	il   *envelope.Interlock
	iv   *envelope.Invoker // the tool pipeline (per-tool statistics)
	mon  *envelope.Monitor
	in   *rigconfig.Instruments
	log  *slog.Logger
	sess *sessions
	hold *clocksync.Hold  // the clock-sync hold of new sessions
	ops  *operators.Table // who holds which role (nil: only root)
}

// HandleStream serves a watched operation (submit --watch), admitted as
// Handle admits.
func (h *handler) HandleStream(ctx context.Context, req control.Request, emit control.Emit) (any, error) {
	if req.Op != control.OpSubmit {
		return h.Handle(ctx, req)
	}
	ctx, id, err := h.admit(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := h.sess.handle(ctx, req, emit)
	h.finish(ctx, req, id, err)
	return res, err
}

// Handle serves every operation of the control socket: the sender is
// identified from the kernel's credentials and its role checked first
// (admit: a refusal is audited with its uid; e-stop needs no role), then
// the operation runs and, if it needs a role or is an e-stop, its outcome
// is audited with the OS user. The e-stop's entry is written once the reply
// is on its way (control.AfterReply): the technician waits for the outputs
// read back safe, not for a second durable write, and the interlock's own
// audit entry of the halts, which names the operator, was written before
// the reply.
func (h *handler) Handle(ctx context.Context, req control.Request) (any, error) {
	ctx, id, err := h.admit(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Op == control.OpWhoami {
		return whoami(id), nil
	}
	res, err := h.dispatch(ctx, req)
	if req.Op == control.OpEStop {
		control.AfterReply(ctx, func() { h.finish(ctx, req, id, err) })
		return res, err
	}
	h.finish(ctx, req, id, err)
	return res, err
}

// dispatch runs an admitted operation: the session operations (sessions),
// audit, ownership, e-stop, tools, status, reset and arm.
func (h *handler) dispatch(ctx context.Context, req control.Request) (any, error) {
	switch req.Op {
	case control.OpSubmit, control.OpApprove, control.OpDeny, control.OpAbort, control.OpPause, control.OpResume, control.OpAnswer,
		control.OpSessions, control.OpArtifact, control.OpAccessList, control.OpAccessApprove, control.OpAccessDeny, control.OpAccessWithdraw:
		return h.sess.handle(ctx, req, nil)
	case control.OpAuditVerify, control.OpAuditReplay, control.OpAuditLog, control.OpAuditReport:
		return h.sess.auditOp(ctx, req)
	case control.OpExport:
		return h.sess.exportOp(ctx, req) // export.go
	case control.OpTakeover, control.OpHandback, control.OpOwnership:
		return h.sess.ownershipOp(ctx, req)
	case control.OpEStop:
		return h.estop(ctx, req.Operator), nil
	case control.OpTools:
		return reply.ToolsOf(h.iv.Stats()), nil
	case control.OpStateUsage:
		return h.sess.stateUsage(ctx)
	case control.OpStatus:
		st := statusOf(h.mon.Status(), h.il.View().Envelope())
		st.Uplink = h.up.Status()
		st.Disk = diskStatus(h.disk)
		st.Clock = clockOf(h.hold)
		st.Budgets = h.sess.budgets(ctx)
		return st, nil
	case control.OpReset:
		if req.Operator == "" {
			return nil, errors.New("reset needs the operator's name (--operator NAME)")
		}
		was, why := h.il.Latched()
		if err := h.il.Reset(ctx, req.Operator); err != nil {
			return nil, err
		}
		h.log.Warn("latch reset", "operator", req.Operator, "was_latched", was, "reason", why)
		if !was {
			return reply.Op{Message: "nothing was latched; reset recorded by " + req.Operator}, nil
		}
		return reply.Op{Message: fmt.Sprintf("latch cleared (%s) by %s", why, req.Operator)}, nil
	case control.OpArm:
		if req.Operator == "" {
			return nil, errors.New("arm needs the operator's name (--operator NAME)")
		}
		if err := h.il.Arm(ctx, req.Operator); err != nil {
			return nil, err
		}
		h.log.Warn("armed: interlock relay energised", "operator", req.Operator)
		return reply.Op{Message: "interlock relay energised by " + req.Operator}, nil
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}

// estop runs the interlock's SafeState and reads every output back, the
// read-backs once every halt has returned, while the interlock writes its
// audit entry (SafeStateThen).
func (h *handler) estop(ctx context.Context, operator string) safestate.Report {
	t0 := time.Now()
	if operator == "" {
		operator = "unknown"
	}
	r := safestate.Report{Via: "daemon", Operator: operator}
	h.log.Warn("e-stop requested on the control socket", "operator", operator)
	var t1, t2 time.Time
	if err := h.il.SafeStateThen(ctx, "estop by "+operator+" (control socket)", func() {
		t1 = time.Now()
		r.Outputs = safestate.Check(ctx, h.in, false)
		t2 = time.Now()
	}); err != nil {
		r.Error = err.Error()
	}
	r.HaltMS, r.ReadBackMS = safestate.MS(t1.Sub(t0)), safestate.MS(t2.Sub(t1))
	r.Finish()
	if r.Error != "" {
		r.AllConfirmed = false
	}
	r.Latched, r.LatchReason = h.il.Latched()
	h.log.Warn("e-stop done", "operator", operator, "all_confirmed", r.AllConfirmed, "took", time.Since(t0))
	return r
}
