package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/control"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/reply"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/safestate"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/session/audit"
	"github.com/hcp-edge/hcp-edge/session/budget"
	"github.com/hcp-edge/hcp-edge/session/capability"
	"github.com/hcp-edge/hcp-edge/session/store"
	"github.com/hcp-edge/hcp-edge/session/token"
)

// stateFile is the daemon's bbolt file inside the state directory.
const stateFile = "state.db"

// shutdownTimeout bounds the shutdown policy and the wait for control
// operations in progress.
const shutdownTimeout = 10 * time.Second

// Config is what the daemon runs with.
type Config struct {
	File     rigconfig.File       // the configuration, defaults applied
	Registry *capability.Registry // the capability declarations
	Logger   *slog.Logger
	Version  string // reported in the log and on the dashboard
}

// Run runs the daemon until ctx ends, then stops it in order (see daemon).
// It returns nil when the daemon stopped cleanly.
func Run(ctx context.Context, c Config) error {
	return daemon(ctx, c.File, c.Registry, c.Logger, c.Version)
}

// daemon runs until ctx ends. Start order: state directory and state file
// (sessions and audit log, one hash chain), token key, rig (relay built
// de-energised), envelope, interlock, furnace watchdog, monitor, session
// engine and its recovery, control socket, uplink, metrics endpoint
// (agent.metrics_listen), dashboard (agent.dashboard_listen). Stop order:
// control socket (intake), dashboard, metrics endpoint, engine, monitor,
// shutdown policy, instruments, state file.
// daemonGOGC is the daemon's GC target percentage unless GOGC is set.
const daemonGOGC = 50

func daemon(ctx context.Context, f rigconfig.File, reg *capability.Registry, log *slog.Logger, version string) (err error) {
	t0 := time.Now()
	defer startDebugPprof(log)() // only with -tags pprof (docs/FOOTPRINT.md)
	if procs := envelope.MonitorMinProcs; os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < procs {
		// go.bug.st/serial reads block an OS thread (and its P) in select(2);
		// on a 2-core host that delayed the monitor's furnace poll and trip
		// procedure by up to 20 ms. See envelope.MonitorMinProcs.
		runtime.GOMAXPROCS(procs)
		log.Debug("GOMAXPROCS raised for blocking serial I/O", "procs", procs)
	}
	if os.Getenv("GOGC") == "" {
		// The daemon's live heap is about 1 MB at rest and a few MB during a
		// session: GOGC 100 lets the heap grow to the runtime's 4 MB floor
		// before collecting; 50 halves the floor and keeps about 2 MB less
		// resident, for a collection (about 1 ms of CPU) every few seconds
		// at rest (docs/FOOTPRINT.md). GOGC in the environment wins.
		debug.SetGCPercent(daemonGOGC)
	}
	if err := os.MkdirAll(f.Agent.StateDir, 0o750); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	st, err := store.Open(filepath.Join(f.Agent.StateDir, rigconfig.StateFile), store.DefaultOpts())
	if err != nil {
		return fmt.Errorf("state file %s (another daemon running?): %w", filepath.Join(f.Agent.StateDir, rigconfig.StateFile), err)
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	alog := st.Audit()
	mx := newAgentMetrics(f, st, log) // nil without agent.metrics_listen (metrics.go)
	defer func() { _ = mx.close(context.Background()) }()
	key, err := loadAtRestKey(f.Agent.AtRestKeyFile, log) // before any instrument is touched
	if err != nil {
		return err
	}
	priv, err := token.LoadOrCreateKey(filepath.Join(f.Agent.StateDir, rigconfig.TokenKeyFile))
	if err != nil {
		return fmt.Errorf("session token key: %w", err)
	}
	tokens, err := token.New(priv, token.DefaultOpts())
	if err != nil {
		return err
	}
	revoked := token.NewRevocations(nil)
	if err := revokeClosed(ctx, st, revoked, time.Now()); err != nil {
		return err
	}

	spec, err := rigconfig.Spec(f.Rig)
	if err != nil {
		return err
	}
	env, err := envelope.Compile(f.Envelope, spec)
	if err != nil {
		return err
	}
	in, err := rigconfig.Build(f.Rig)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, in.Close()) }()
	if _, err := in.Relay(); err != nil { // de-energised at start
		return err
	}
	if err := in.StartInputs(ctx); err != nil {
		return err
	}
	rig, err := in.Rig()
	if err != nil {
		return err
	}
	authz, err := token.NewAuthorizer(tokens, env, revoked)
	if err != nil {
		return err
	}
	iopts := envelope.DefaultInterlockOpts()
	iopts.Logger = log
	acts := budget.NewActionCounter() // the actions budget counts what the interlock executed (session/budget)
	il, err := envelope.NewInterlock(env, rig, authz, acts.Auditor(mx.auditor(audit.Interlock{Log: alog})), iopts)
	if err != nil {
		return err
	}
	iv, err := newInvoker(il, f.Agent.TimeScale) // the tool pipeline: the only caller of the interlock (tools.go)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = in.Furnace.ConfigureWatchdog(wctx, f.Monitor.WatchdogTimeout)
	cancel()
	if err != nil {
		return fmt.Errorf("furnace watchdog: %w", err)
	}
	mon, err := envelope.NewMonitor(il, envelope.MonitorOpts{FurnaceEvery: f.Monitor.FurnaceEvery,
		OtherEvery: f.Monitor.OtherEvery, KickEvery: f.Monitor.KickEvery, Logger: log, OnPoll: mx.onPoll()})
	if err != nil {
		return err
	}
	// The monitor runs on a context of its own: it must outlive intake so
	// that the rig stays watched while the control socket drains.
	if err := mon.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	monClosed := false
	defer func() {
		if !monClosed {
			_ = mon.Close()
		}
	}()
	hb, err := newHub(filepath.Join(f.Agent.StateDir, rigconfig.ResultsDir), sealerFor(st, key), log)
	if err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	if err := migrateOutboxFile(f.Agent.StateDir, st, log); err != nil { // an earlier version's outbox.db
		return err
	}
	up, err := newUplink(f, st, log) // nil without agent.amqp.url (uplink.go)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, up.close()) }()
	if up != nil {
		st.SetQueue(up) // every step queues its messages in its own transaction
	}
	eng, err := newEngine(f, st, alog, mx.gateRecorder, key, reg, tokens, revoked, il, iv, mon, acts, hb, up, log)
	if err != nil {
		return err
	}
	engClosed := false
	defer func() {
		if !engClosed {
			_ = eng.Close()
		}
	}()
	// Recovery judges the rig from the monitor's cache: with sessions to
	// recover, wait (at most the comms timeout) until every instrument has
	// been read once, or a channel not read yet would count as lost.
	if act, err := st.Sessions(ctx, true); err == nil && len(act) > 0 {
		wctx, wcancel := context.WithTimeout(ctx, env.CommsTimeout())
		if err := mon.WaitFirstReadings(wctx); err != nil {
			log.Warn("recovery: not every instrument answered within the comms timeout", "err", err)
		}
		wcancel()
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	recs, err := eng.Recover(rctx)
	rcancel()
	if err != nil {
		return fmt.Errorf("session recovery: %w", err)
	}
	for _, r := range recs {
		log.Warn("session recovered", "session", r.SessionID, "from", r.From, "decision", r.Decision, "err", r.Err)
	}
	if err := up.attach(f, eng); err != nil {
		return err
	}
	h := &handler{il: il, iv: iv, mon: mon, in: in, log: log, up: up,
		sess: &sessions{eng: eng, st: st, hub: hb, stateDir: f.Agent.StateDir, log: log}}
	up.serveExtensions(f, reg, env, h.sess) // discovery and artifact fetch over the broker
	srv, err := control.Listen(f.Agent.ControlSocket, h, control.Opts{Logger: log})
	if err != nil {
		return err
	}
	if err := up.Start(); err != nil { // the uplink last: the broker may be down, the outbox holds
		_ = srv.Shutdown(context.Background())
		return err
	}
	if err := mx.start(f, il, iv, up); err != nil {
		_ = srv.Shutdown(context.Background())
		return err
	}
	dash, err := startDashboard(f, h, version, log) // nil without agent.dashboard_listen (dashboard.go)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		_ = mx.close(context.Background())
		return err
	}
	log.Info("hcp-edge running", "version", version, "state_dir", f.Agent.StateDir, "control_socket", srv.Path(),
		"watchdog_timeout", f.Monitor.WatchdogTimeout, "kick_every", f.Monitor.KickEvery, "time_scale", f.Agent.TimeScale,
		"capabilities", len(reg.All()), "recovered", len(recs), "startup", time.Since(t0))

	// systemd (Type=notify): ready now that the control socket is up; the
	// watchdog is fed while the monitor answers. No-op outside systemd.
	sd := startNotifier(log, "control socket "+srv.Path(), func() bool { mon.Status(); return true })
	defer sd.Close()

	<-ctx.Done()
	sd.Stopping()
	log.Info("hcp-edge stopping", "policy", f.Agent.ShutdownPolicy)
	sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer scancel()
	up.stopIntake(sctx) // no new broker commands; the outbox keeps draining
	err = srv.Shutdown(sctx)
	if dash != nil {
		err = errors.Join(err, dash.Shutdown(sctx))
	}
	err = errors.Join(err, mx.close(sctx))
	engClosed = true
	err = errors.Join(err, eng.Close())
	saveToolStats(f.Agent.StateDir, iv.Stats(), log) // for `hcp-edge tools` once the daemon is gone (tools.go)
	monClosed = true
	err = errors.Join(err, mon.Close())
	switch f.Agent.ShutdownPolicy {
	case rigconfig.ShutdownSafeState:
		if serr := il.SafeState(sctx, "agent shutdown (policy safe_state)"); serr != nil {
			err = errors.Join(err, fmt.Errorf("shutdown policy: %w", serr))
		} else {
			log.Info("outputs safe (policy safe_state)")
		}
	case rigconfig.ShutdownHold:
		log.Warn("outputs left as they are (policy hold); the furnace watchdog drops the heater", "after", f.Monitor.WatchdogTimeout)
	}
	return err
}

// handler serves the control socket's operations.
type handler struct {
	up   *uplink // nil without a broker
	il   *envelope.Interlock
	iv   *envelope.Invoker // the tool pipeline (per-tool statistics)
	mon  *envelope.Monitor
	in   *rigconfig.Instruments
	log  *slog.Logger
	sess *sessions
}

// HandleStream serves a watched operation (submit --watch).
func (h *handler) HandleStream(ctx context.Context, req control.Request, emit control.Emit) (any, error) {
	if req.Op != control.OpSubmit {
		return h.Handle(ctx, req)
	}
	return h.sess.handle(ctx, req, emit)
}

func (h *handler) Handle(ctx context.Context, req control.Request) (any, error) {
	switch req.Op {
	case control.OpSubmit, control.OpApprove, control.OpDeny, control.OpAbort, control.OpPause, control.OpResume,
		control.OpSessions, control.OpArtifact, control.OpAccessList, control.OpAccessApprove, control.OpAccessDeny:
		return h.sess.handle(ctx, req, nil)
	case control.OpAuditVerify, control.OpAuditReplay:
		return h.sess.auditOp(ctx, req)
	case control.OpTakeover, control.OpHandback, control.OpOwnership:
		return h.sess.ownershipOp(ctx, req)
	case control.OpEStop:
		return h.estop(ctx, req.Operator), nil
	case control.OpTools:
		return reply.ToolsOf(h.iv.Stats()), nil
	case control.OpStatus:
		st := statusOf(h.mon.Status(), h.il.View().Envelope())
		st.Uplink = h.up.status()
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

// estop runs the interlock's SafeState and reads every output back.
func (h *handler) estop(ctx context.Context, operator string) safestate.Report {
	t0 := time.Now()
	if operator == "" {
		operator = "unknown"
	}
	r := safestate.Report{Via: "daemon", Operator: operator}
	h.log.Warn("e-stop requested on the control socket", "operator", operator)
	if err := h.il.SafeState(ctx, "estop by "+operator+" (control socket)"); err != nil {
		r.Error = err.Error()
	}
	r.Outputs = safestate.Check(ctx, h.in, false)
	r.Finish()
	if r.Error != "" {
		r.AllConfirmed = false
	}
	r.Latched, r.LatchReason = h.il.Latched()
	h.log.Warn("e-stop done", "operator", operator, "all_confirmed", r.AllConfirmed, "took", time.Since(t0))
	return r
}

// statusOf turns the monitor's status into the status reply.
func statusOf(st envelope.MonitorStatus, env *envelope.Envelope) reply.Status {
	r := st.Readings
	out := reply.Status{At: time.Now(), Latched: st.Latched, LatchReason: st.LatchReason, Healthy: st.Healthy,
		Readings: map[string]string{}, Values: map[string]any{}, Relay: "unknown"}
	age := func(at time.Time) string {
		if at.IsZero() {
			return "never read"
		}
		return fmt.Sprintf("%v ago", time.Since(at).Round(time.Millisecond))
	}
	if f := r.Furnace; !f.At.IsZero() {
		out.Readings["furnace"] = fmt.Sprintf("PV %.1f °C, setpoint %.1f °C, output %s, heater %s, alarms %#04x (%s)",
			f.ProcessValue.Celsius(), f.Setpoint.Celsius(), f.OutputPower, safestate.OnOff(f.HeaterEnabled), uint16(f.Alarms), age(f.At))
		out.Values["furnace.pv_c"] = round1(f.ProcessValue.Celsius())
		out.Values["furnace.setpoint_c"] = round1(f.Setpoint.Celsius())
		out.Values["furnace.heater_enabled"] = f.HeaterEnabled
		out.Values["furnace.output_pct"] = float64(f.OutputPower)
	}
	if p := r.Pressure; !p.At.IsZero() {
		out.Readings["chamber.pressure"] = fmt.Sprintf("%.4g mbar, %s (%s)", p.Pressure.Millibar(), p.Status, age(p.At))
		out.Values["chamber.pressure_mbar"] = p.Pressure.Millibar()
	}
	for gas, fl := range r.Flows {
		out.Readings["flow."+gas] = fmt.Sprintf("%.2f sccm, setpoint %.2f sccm %v (%s)", fl.Flow.SCCM(), fl.Setpoint.SCCM(), fl.Flags, age(fl.At))
		out.Values["flow."+gas+".sccm"] = fl.Flow.SCCM()
		out.Values["flow."+gas+".setpoint_sccm"] = fl.Setpoint.SCCM()
	}
	for name, l := range r.Switches {
		out.Readings["switch."+name] = fmt.Sprintf("%s (%s)", safestate.OnOff(l.On), age(l.At))
		out.Values["switch."+name] = l.On
	}
	for name, l := range r.Inputs {
		out.Readings["input."+name] = fmt.Sprintf("%t (%s)", l.On, age(l.At))
		out.Values["input."+name] = l.On
	}
	if l, ok := r.Inputs[rigconfig.InputRelayFB]; ok && !l.At.IsZero() {
		out.Relay = safestate.Energised(l.On)
	} else if l, ok := r.Switches[rigconfig.SwitchRelay]; ok && !l.At.IsZero() {
		out.Relay = safestate.Energised(l.On)
	}
	for _, m := range st.Margins {
		out.Margins = append(out.Margins, reply.Margin{Channel: m.Channel, Value: m.Value, Min: m.Min, Max: m.Max, Unit: m.Unit,
			Margin: m.Headroom(), Applies: m.Applies, Context: m.Context})
	}
	for _, t := range st.Trips {
		out.Trips = append(out.Trips, reply.Trip{Trip: string(t.Trip), Procedure: string(t.Procedure), Channel: t.Channel, Reason: t.Reason, At: t.At})
	}
	out.Activity = env.Activity(r).String()
	if n := len(st.Trips); st.Latched && n > 0 {
		at := st.Trips[n-1].At
		out.TripAt = &at
	}
	return out
}

// revokeClosed puts back on the revocation list, at start, every closed
// session of st whose tokens may not have expired yet: the list lives in
// memory, and a token of a session closed just before a restart must stay
// useless. A token expires at most max_duration after it was issued, and
// it was issued before the session's last transition.
func revokeClosed(ctx context.Context, st *store.Store, rev *token.Revocations, now time.Time) error {
	all, err := st.Sessions(ctx, false)
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	for _, s := range all {
		if !s.State.Terminal() {
			continue
		}
		if exp := s.UpdatedAt.Add(time.Duration(s.MaxDuration)); exp.After(now) {
			rev.Revoke(s.ID, exp)
		}
	}
	return nil
}
