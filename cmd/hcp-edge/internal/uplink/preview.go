package uplink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/discovery"
	"hcp-edge/cmd/hcp-edge/internal/preview"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// PreviewWallLimit bounds one preview_request's run in wall time: a
// harness cannot hold the agent's CPU longer than this per request.
const PreviewWallLimit = 15 * time.Second

// previews runs the preview_requests (docs/PROTOCOL-NOTES.md, "Preview")
// off the inbox, whose Handle must return quickly: one at a time for the
// whole agent (another is refused unavailable meanwhile), each bounded by
// PreviewWallLimit. Its goroutine is owned here: close cancels it and
// waits for it.
type previews struct {
	busy   chan struct{} // a token while a preview runs
	mu     sync.Mutex
	active string // message_id of the running request
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newPreviews() *previews {
	ctx, cancel := context.WithCancel(context.Background())
	return &previews{busy: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// close cancels a running preview and waits for it (its answer, if any,
// queued by then).
func (p *previews) close() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
}

// previewRequest answers a preview_request: it checks the request as
// discovery checks a capabilities_request (the broker-validated login's
// caller, its access list) and the inputs against the capability's schema
// and its executor's plan, right away; then it runs the preview in the
// background and queues the preview_response when done. It touches no
// hardware and holds no rig lock.
func (u *Uplink) previewRequest(_ context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	if cmd.MappedCallerID == "" {
		u.log.Warn("preview_request of a broker user mapped to no caller: not answered", "user", cmd.UserID,
			"message_id", cmd.Envelope.MessageID)
		return tamqp.Outcome{Unrecorded: true}, nil
	}
	if u.ext == nil || u.ext.previews == nil {
		return refused(cmd, wire.ReasonUnavailable, "this agent does not serve previews")
	}
	x := u.ext
	req, err := cmd.Envelope.PreviewRequest()
	if err != nil {
		return refused(cmd, wire.ReasonInvalidInput, "%v", err)
	}
	refuse := func(code, format string, args ...any) (tamqp.Outcome, error) {
		return u.refuseAudited(cmd, wire.TypePreviewRequest, req.Capability, code, fmt.Sprintf(format, args...))
	}
	offers, err := discovery.Offers(x.calleeID, cmd.MappedCallerID, x.acl, x.reg, x.env, req.Capability)
	switch {
	case errors.Is(err, discovery.ErrNoACL):
		return refuse(wire.ReasonForbidden, "caller %s has no permissions on this agent", cmd.MappedCallerID)
	case err != nil:
		return tamqp.Outcome{}, err
	case len(offers.Capabilities) == 0:
		return refuse(wire.ReasonNotFound, "caller %s may use no capability named %q here", cmd.MappedCallerID, req.Capability)
	}
	c, err := x.reg.Resolve(req.Capability, req.CapabilityVersion)
	if err != nil {
		return refuse(wire.ReasonNotFound, "%v", err)
	}
	xr, ok := x.executor(c.Name) // what a session would run: a recipe's executor or a built-in one
	if !ok {
		return refuse(wire.ReasonNotFound, "capability %s has no executor on this agent", c.Name)
	}
	task := executor.Task{SessionID: "preview", Inputs: req.Inputs}
	if err := c.ValidateInput(req.Inputs); err != nil {
		return refuse(wire.ReasonInvalidInput, "inputs: %v", err)
	}
	if _, err := xr.Plan(task); err != nil {
		return refuse(wire.ReasonInvalidInput, "%v", err)
	}
	mid := cmd.Envelope.MessageID.String()
	select {
	case x.previews.busy <- struct{}{}:
	default:
		x.previews.mu.Lock()
		again := x.previews.active == mid
		x.previews.mu.Unlock()
		if again { // the caller republished the running request: its answer is coming
			return tamqp.Outcome{Unrecorded: true}, nil
		}
		return refuse(wire.ReasonUnavailable, "a preview is running on this agent; one runs at a time: ask again when its answer has come")
	}
	x.previews.mu.Lock()
	x.previews.active = mid
	x.previews.mu.Unlock()
	x.previews.wg.Add(1)
	go func() {
		defer x.previews.wg.Done()
		defer func() {
			x.previews.mu.Lock()
			x.previews.active = ""
			x.previews.mu.Unlock()
			<-x.previews.busy
		}()
		u.runPreview(cmd, c, xr, task)
	}()
	u.log.Info("preview_request accepted", "user", cmd.UserID, "caller", cmd.MappedCallerID, "capability", c.Name)
	return tamqp.Outcome{Unrecorded: true}, nil
}

// runPreview runs one preview and queues its answer: the preview_response,
// or request_refused (unavailable) when it could not run.
func (u *Uplink) runPreview(cmd tamqp.Command, c *capability.Capability, x executor.Executor, task executor.Task) {
	ext := u.ext
	p, err := preview.Run(ext.previews.ctx, x, task, preview.Opts{Config: ext.config, Envelope: ext.env, Capability: c,
		WallLimit: PreviewWallLimit})
	if err == nil && ext.previews.ctx.Err() != nil {
		err = errors.New("the agent is stopping")
	}
	var env *wire.Envelope
	if err == nil {
		var pred []byte
		if pred, err = json.Marshal(p); err == nil {
			env, err = wire.NewEnvelope(nil, &wire.PreviewResponse{CalleeID: ext.calleeID, Capability: c.Name,
				Version: c.SemVer.String(), Prediction: pred}, time.Now())
		}
	}
	if err != nil {
		code := wire.ReasonUnavailable
		if errors.Is(err, preview.ErrInput) {
			code = wire.ReasonInvalidInput
		}
		u.log.Warn("preview failed", "caller", cmd.MappedCallerID, "capability", c.Name, "err", err)
		if env, err = wire.NewEnvelope(nil, &wire.RequestRefused{RequestType: wire.TypePreviewRequest, ReasonCode: code,
			ReasonMessage: fmt.Sprintf("the preview did not run: %v", err)}, time.Now()); err != nil {
			u.log.Error("preview: answer", "err", err)
			return
		}
	}
	m, err := outbox.MessageFor(cmd.MappedCallerID, env, cmd.Envelope.MessageID.String())
	if err == nil {
		err = u.st.DB().Update(func(tx *bolt.Tx) error {
			_, err := u.ob.AppendTx(tx, m)
			return err
		})
	}
	if err != nil {
		u.log.Error("preview: queueing the answer", "caller", cmd.MappedCallerID, "err", err)
		return
	}
	if p != nil {
		u.log.Info("preview answered", "caller", cmd.MappedCallerID, "capability", c.Name, "completed", p.Completed,
			"process_time", time.Duration(p.ProcessTime), "wall", time.Duration(p.WallTime))
	}
}
