package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/hub"
	"hcp-edge/cmd/hcp-edge/internal/preview"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/uplink"
	"hcp-edge/device/catalog"
	"hcp-edge/device/rig"
	"hcp-edge/envelope"
	"hcp-edge/internal/wallclock"
	"hcp-edge/session/analysis"
	"hcp-edge/session/atrest"
	"hcp-edge/session/budget"
	"hcp-edge/session/capability"
	"hcp-edge/session/engine"
	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/session/token"
	"hcp-edge/transport/wire"
)

// executors builds the executor of every capability the registry
// declares: a recipe's from rx (by name), the built-in ones by name. The
// names it has none for are returned apart (missing): not to be offered.
func executors(reg *capability.Registry, rx []*executor.RecipeExecutor) (out []executor.Executor, missing []string, err error) {
	for _, c := range reg.All() {
		if slices.ContainsFunc(out, func(x executor.Executor) bool { return x.Capability() == c.Name }) {
			continue
		}
		if i := slices.IndexFunc(rx, func(x *executor.RecipeExecutor) bool { return x.Capability() == c.Name }); i >= 0 {
			out = append(out, rx[i])
			continue
		}
		if slices.Contains(missing, c.Name) {
			continue
		}
		hi, err := reg.Resolve(c.Name, "")
		if err != nil {
			return nil, nil, err
		}
		x, err := preview.For(hi) // the one factory of built-in executors: a preview runs what a session would
		if errors.Is(err, preview.ErrUnknownCapability) {
			missing = append(missing, c.Name)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, x)
	}
	return out, missing, nil
}

// sessions is the daemon's session side: the engine and the local fan-out
// of its messages.
type sessions struct {
	eng      *engine.Engine
	st       *store.Store
	hub      *hub.Hub
	stateDir string
	log      *slog.Logger
	version  string        // the agent's, for exports (export.go)
	rig      rigconfig.Rig // the rig's instruments, for exports
	exportMu sync.Mutex    // one .eln archive built at a time for a fetch (export.go)
}

// newInvoker builds the tool pipeline over il, with the catalog generated
// from the rig's layout (catalog.Generate: a setpoint tool per zone, a tool
// per output): every action of a recipe is a call of one of its tools, by name and
// version (executor.ToolRig), and nothing else calls the interlock.
// The tools' rate limits count the rig's process time (agent.time_scale:
// the simulator's plant lives faster than the wall clock; 1 on a real rig).
func newInvoker(il *envelope.Interlock, layout rig.Layout, timeScale float64) (*envelope.Invoker, error) {
	tools, err := catalog.Generate(layout, analysis.MaterialNames()...)
	if err != nil {
		return nil, fmt.Errorf("tool catalog: %w", err)
	}
	if timeScale <= 0 {
		timeScale = 1
	}
	process, err := executor.NewScaledClock(timeScale)
	if err != nil {
		return nil, fmt.Errorf("agent.time_scale: %w", err)
	}
	return envelope.NewInvoker(il, tools, envelope.InvokerOpts{RateClock: process.Now})
}

// newEngine assembles the session engine over the tool pipeline iv (every
// action of a run is a tool call through it). rec is
// the gate's recorder (the state file's audit log) and wrap what counts its
// decisions (the metrics when they are on; the engine records each decision
// in the transaction of its step, through wrap); key is the at-rest key
// (nil: T3/T4 refused); acts counts the actions the interlock executes for
// each session (the actions budget; its Auditor wraps the interlock's); out
// the local watchers; up the uplink (nil: none); xs the executors of the
// registry's capabilities; models the analyse phase's model router, which
// newEngine registers on iv as the handler of raman.analyze.
func newEngine(f rigconfig.File, st *store.Store, rec gate.Recorder, wrap func(gate.Recorder) gate.Recorder, key *atrest.Key,
	reg *capability.Registry, auth *token.Authority, rev *token.Revocations, il *envelope.Interlock, iv *envelope.Invoker, mon *envelope.Monitor,
	acts *budget.ActionCounter, out engine.Outbound, up *uplink.Uplink, clock *wallclock.Clock, hold func() string, xs []executor.Executor,
	models executor.Analyzer, log *slog.Logger) (*engine.Engine, error) {
	g, err := gate.New(f.Gate, reg, wrap(rec), gate.Opts{Protection: uplink.ProtectionOf(up, key)})
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if err := registerAnalysis(iv, models); err != nil { // models.go
		return nil, err
	}
	return engine.New(engine.Config{Store: st, Gate: g, Registry: reg, Tokens: auth, Revocations: rev, Executors: xs,
		GateRecorder: wrap, Rig: executor.ToolRig(iv, mon), Out: out, SafeState: il.SafeState, StateDir: f.Agent.StateDir, AtRest: key,
		TimeScale: f.Agent.TimeScale, ApprovalTimeout: f.Agent.ApprovalTimeout, RecoveryGrace: f.Agent.RecoveryGrace,
		AccessTimeout: f.Agent.AccessTimeout, AccessApprovalFor: f.Agent.AccessApprovalFor, AccessApprovers: f.Agent.AccessApprovers,
		ApprovalsRequired: f.Agent.ApprovalsRequired, Handoff: engine.HandoffConfig{Callers: f.Gate.Callers, Local: rigconfig.LocalUser},
		Actions: acts, Clock: clock, Hold: hold, Logger: log.With("component", "engine")})
}

// loadAtRestKey loads the at-rest key of agent.at_rest_key_file; nil
// without one (T3/T4 sessions are then refused). A configured key that
// cannot be loaded stops the start: T3/T4 data must not be handled with a
// key nobody checked.
func loadAtRestKey(path string, log *slog.Logger) (*atrest.Key, error) {
	if path == "" {
		log.Info("no at-rest key (agent.at_rest_key_file): T3/T4 sessions are refused")
		return nil, nil
	}
	key, err := atrest.LoadKey(path)
	if err != nil {
		return nil, fmt.Errorf("agent.at_rest_key_file: %w", err)
	}
	log.Info("at-rest key loaded: T3/T4 artifacts and checkpoints are sealed under it", "file", path, "key_id", key.ID())
	return key, nil
}

// decodeSubmit checks the request's task_submit envelope.
func decodeSubmit(raw json.RawMessage) (*wire.Envelope, error) {
	if len(raw) == 0 {
		return nil, errors.New("submit needs a task_submit envelope")
	}
	env, err := wire.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("task_submit: %w", err)
	}
	if env.Type != wire.TypeTaskSubmit {
		return nil, fmt.Errorf("the message is a %s, not a task_submit", env.Type)
	}
	return env, nil
}

// submit runs a local task_submit. Without emit it returns the replies at
// once; with emit it streams every message of the session and returns the
// final one (task_completed, task_failed, task_rejected, or the
// session_closed event of an aborted session).
func (s *sessions) submit(ctx context.Context, req control.Request, emit control.Emit) (any, error) {
	env, err := decodeSubmit(req.Task)
	if err != nil {
		return nil, err
	}
	var msgs <-chan hub.Msg
	if emit != nil {
		ch, unsub := s.hub.Subscribe()
		defer unsub()
		msgs = ch
	}
	res, err := s.eng.Submit(ctx, engine.SubmitRequest{MessageID: env.MessageID.String(), BrokerUser: rigconfig.LocalUser, Envelope: env})
	if err != nil {
		return nil, err
	}
	// The engine has handed the replies to the hub (the watchers, results/)
	// and started the session once its transaction committed.
	out := reply.Submit{SessionID: res.SessionID}
	for _, r := range res.Replies {
		b, _ := wire.Encode(r)
		out.Replies = append(out.Replies, b)
		if a := reply.ApprovalID(r); a != "" {
			out.ApprovalID = a
		}
	}
	s.log.Info("local submit", "session", res.SessionID, "approval_id", out.ApprovalID, "replies", len(res.Replies))
	if emit == nil {
		return out, nil
	}
	for _, r := range res.Replies {
		if r.Type == wire.TypeTaskRejected {
			return json.RawMessage(reply.Encode(r)), nil
		}
	}
	seen := map[string]bool{}
	for _, r := range res.Replies {
		seen[r.MessageID.String()] = true
		_ = emit(json.RawMessage(reply.Encode(r)))
	}
	return s.watch(ctx, res.SessionID, msgs, seen, emit)
}

// watch streams session sid's messages until its final one, skipping the
// messages already sent (seen).
func (s *sessions) watch(ctx context.Context, sid string, msgs <-chan hub.Msg, seen map[string]bool, emit control.Emit) (any, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("watch of %s ended: %w", sid, context.Cause(ctx))
		case m, ok := <-msgs:
			if !ok {
				return nil, fmt.Errorf("watch of %s dropped: it lagged by %d messages", sid, hub.WatchBuffer)
			}
			if m.Env.SessionID == nil || m.Env.SessionID.String() != sid || seen[m.Env.MessageID.String()] {
				continue
			}
			b := json.RawMessage(reply.Encode(m.Env))
			switch m.Env.Type {
			case wire.TypeTaskCompleted, wire.TypeTaskFailed, wire.TypeTaskRejected:
				return b, nil
			}
			if ev, err := m.Env.Event(); err == nil && ev.EventType == string(lifecycle.EventSessionClosed) {
				if st, err := s.eng.State(ctx, sid); err == nil && st == lifecycle.Aborted {
					return b, nil
				}
			}
			if err := emit(b); err != nil {
				return nil, err
			}
		}
	}
}

func (s *sessions) list(ctx context.Context, all bool) ([]reply.Session, error) {
	ss, err := s.st.Sessions(ctx, !all)
	if err != nil {
		return nil, err
	}
	out := make([]reply.Session, 0, len(ss))
	for _, x := range ss {
		v := reply.Session{ID: x.ID, State: string(x.State), Capability: x.Capability, Version: x.CapabilityVersion,
			Caller: x.CallerID, Risk: x.RiskLevel, DataClass: x.DataClass, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
		var m struct {
			ApprovalID string `json:"approval_id"`
			Operator   string `json:"operator"`
		}
		_ = json.Unmarshal(x.Metadata, &m)
		if x.State == lifecycle.Pending {
			v.ApprovalID = m.ApprovalID
		}
		v.Operator = m.Operator
		if p, ok := s.hub.Progress(x.ID); ok && !x.State.Terminal() {
			v.Progress = &p
		}
		if r, ok := s.eng.Budgets(x.ID); ok && !x.State.Terminal() {
			v.Budgets = &r
		}
		if q, ok := engine.PendingQuestionIn(x); ok {
			v.Question = &reply.Question{CheckpointID: q.CheckpointID, Name: q.Name, Question: q.Question,
				Answer: q.Answer.String(), Deadline: q.Deadline}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b reply.Session) int { return a.CreatedAt.Compare(b.CreatedAt) }(out[i], out[j]) < 0
	})
	return out, nil
}

// budgets is every live session's resource usage against its budgets,
// oldest first (status).
func (s *sessions) budgets(ctx context.Context) []reply.Budget {
	ss, err := s.st.Sessions(ctx, true)
	if err != nil {
		return nil
	}
	sort.SliceStable(ss, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b store.Session) int { return a.CreatedAt.Compare(b.CreatedAt) }(ss[i], ss[j]) < 0
	})
	var out []reply.Budget
	for _, x := range ss {
		if r, ok := s.eng.Budgets(x.ID); ok {
			out = append(out, reply.Budget{SessionID: x.ID, Capability: x.Capability, State: string(x.State), Report: r})
		}
	}
	return out
}

func (s *sessions) artifact(uri string) (reply.Artifact, error) {
	sid, name, err := reply.ParseArtifactURI(uri)
	if err != nil {
		return reply.Artifact{}, err
	}
	fin, err := s.hub.Final(sid)
	if err != nil {
		return reply.Artifact{}, fmt.Errorf("no recorded result for session %s (artifacts are listed once it completes or fails): %w", sid, err)
	}
	var arts []wire.Artifact
	switch fin.Type {
	case wire.TypeTaskCompleted:
		tc, err := fin.TaskCompleted()
		if err != nil {
			return reply.Artifact{}, err
		}
		arts = tc.Artifacts
	case wire.TypeTaskFailed:
		tf, err := fin.TaskFailed()
		if err != nil {
			return reply.Artifact{}, err
		}
		arts = tf.Artifacts
	}
	for _, a := range arts {
		if a.URI == uri {
			v := reply.Artifact{URI: uri, SessionID: sid, Name: name, Path: filepath.Join(s.stateDir, rigconfig.ArtifactsDir, sid, name),
				SizeBytes: a.SizeBytes, Checksum: a.Checksum, Type: a.Type}
			return v, s.sealing(&v)
		}
	}
	return reply.Artifact{}, fmt.Errorf("session %s has no artifact %q", sid, name)
}

// sealing fills in the data classification of v's session and, for a
// T3/T4 session, that its file is sealed and with which key.
func (s *sessions) sealing(v *reply.Artifact) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := s.st.Session(ctx, v.SessionID)
	if err != nil {
		return fmt.Errorf("session %s: %w", v.SessionID, err)
	}
	v.DataClass = sess.DataClass
	if v.Sealed = engine.Sealed(sess.DataClass); v.Sealed && s.eng != nil {
		if k := s.eng.AtRestKey(); k != nil {
			v.KeyFile, v.KeyID = k.Source(), k.ID()
		}
	}
	return nil
}

// handle serves the session operations of the control socket.
func (s *sessions) handle(ctx context.Context, req control.Request, emit control.Emit) (any, error) {
	needID := func() error {
		if req.ID == "" {
			return fmt.Errorf("%s needs a session or approval id", req.Op)
		}
		return nil
	}
	needOperator := func() error {
		if req.Operator == "" {
			return fmt.Errorf("%s needs the operator's name (--operator NAME)", req.Op)
		}
		return nil
	}
	switch req.Op {
	case control.OpSubmit:
		return s.submit(ctx, req, emit)
	case control.OpSessions:
		return s.list(ctx, req.All)
	case control.OpArtifact:
		return s.artifactAudited(ctx, req)
	case control.OpAccessList, control.OpAccessApprove, control.OpAccessDeny, control.OpAccessWithdraw:
		return s.access(ctx, req)
	}
	if err := needID(); err != nil {
		return nil, err
	}
	var err error
	var msg string
	switch req.Op {
	case control.OpApprove:
		if err = needOperator(); err == nil {
			var a engine.Approvals
			a, err = s.eng.ApproveAs(ctx, req.ID, signerOf(ctx, req.Operator))
			msg = fmt.Sprintf("approved by %s (%s, %d of %d)", signerOf(ctx, req.Operator), engine.MeaningExecution, a.Have, a.Need)
			if err == nil && a.Have < a.Need {
				msg += fmt.Sprintf("; still PENDING: it needs %d more approval(s) by different OS users", a.Need-a.Have)
			}
		}
	case control.OpDeny:
		if err = needOperator(); err == nil {
			err = s.eng.Deny(ctx, req.ID, req.Operator, req.Reason)
			msg = "denied by " + req.Operator
		}
	case control.OpAbort:
		reason := "aborted by the local operator"
		if req.Operator != "" {
			reason = "aborted by operator " + req.Operator
		}
		if req.Reason != "" {
			reason += ": " + req.Reason
		}
		err = s.eng.Abort(ctx, req.ID, reason)
		msg = "abort requested"
	case control.OpPause:
		if err = needOperator(); err == nil {
			err = s.eng.Pause(ctx, req.ID, req.Operator)
			msg = "pause requested by " + req.Operator + " (takes effect at the next step boundary)"
		}
	case control.OpResume:
		if err = needOperator(); err == nil {
			err = s.eng.Resume(ctx, req.ID, req.Operator)
			msg = "resumed by " + req.Operator
		}
	case control.OpAnswer:
		if err = needOperator(); err == nil {
			var a engine.Answer
			a, err = s.eng.AnswerQuestion(ctx, req.ID, req.Checkpoint, req.Value, signerOf(ctx, req.Operator))
			msg = fmt.Sprintf("answered %v at %s by %s; the session goes on", a.Value, req.Checkpoint, a.By)
		}
	default:
		return nil, fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		return nil, err
	}
	s.log.Warn("session "+req.Op, "id", req.ID, "operator", req.Operator, "reason", req.Reason)
	return reply.Op{Message: fmt.Sprintf("%s: %s", req.ID, msg)}, nil
}
