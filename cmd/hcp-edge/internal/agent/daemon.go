package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/clocksync"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/dashboard"
	"hcp-edge/cmd/hcp-edge/internal/gcburst"
	"hcp-edge/cmd/hcp-edge/internal/hub"
	"hcp-edge/cmd/hcp-edge/internal/operators"
	"hcp-edge/cmd/hcp-edge/internal/recipes"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/uplink"
	"hcp-edge/device"
	"hcp-edge/drivers/regmap"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
	"hcp-edge/internal/wallclock"
	"hcp-edge/session/atrest"
	"hcp-edge/session/audit"
	"hcp-edge/session/budget"
	"hcp-edge/session/capability"
	"hcp-edge/session/engine"
	"hcp-edge/session/executor"
	"hcp-edge/session/retention"
	"hcp-edge/session/store"
	"hcp-edge/session/token"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// shutdownTimeout bounds the shutdown policy and the wait for control
// operations in progress.
const shutdownTimeout = 10 * time.Second

// daemonGOGC is the daemon's GC target percentage unless GOGC is set.
const daemonGOGC = 50

// Config is what the daemon runs with.
type Config struct {
	File     rigconfig.File       // the configuration, defaults applied
	Registry *capability.Registry // the capability declarations
	Logger   *slog.Logger
	Version  string // reported in the log and on the dashboard
}

// Run runs the daemon until ctx ends and returns nil when it stopped
// cleanly.
//
// Start, one step after the other (a failed step stops the start, and what
// the earlier ones opened is closed in reverse order):
//
//  1. openState: state directory and state file (sessions and audit log,
//     one hash chain), metrics, at-rest key, session token key, revocations
//  2. openRig: envelope, instruments (relay de-energised), interlock, tool
//     pipeline, furnace watchdog; loadRecipes: the shipped recipes and
//     agent.recipes_dir checked against the envelope, each that passes a
//     capability with its executor (recipes.go; SIGHUP reloads them)
//  3. startMonitor: the trip monitor, on a context of its own
//  4. startSessions: hub, uplink (its outbox is the store's Queue), gate
//     and engine: the inbound path broker → gate → engine → outbox
//  5. recoverSessions: the sessions a previous run left; startRetention:
//     the pruner of closed sessions past their retention (retention.go)
//  6. serve: uplink attached to the engine, discovery and artifact fetch,
//     control socket, uplink started, metrics endpoint
//     (agent.metrics_listen), dashboard (agent.dashboard_listen)
//
// Stop (stop): intake first (uplink commands, control socket), dashboard,
// metrics endpoint, the pruner, engine (sessions left for the next start's recovery),
// monitor, the shutdown policy on the outputs; then release: uplink
// (flushed), instruments, state file.
func Run(ctx context.Context, c Config) (err error) {
	d := &daemon{f: c.File, reg: c.Registry, log: c.Logger, version: c.Version, t0: time.Now(), clock: wallclock.New()}
	// SIGHUP reloads the recipes (recipes.go); caught from the start, so
	// that one during the start does not end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	defer startDebugPprof(d.log)() // only with -tags pprof (docs/FOOTPRINT.md)
	d.gc = tuneRuntime(d.log)
	defer func() { err = errors.Join(err, d.release()) }()
	for _, step := range []func(context.Context) error{
		d.openState, d.openRig, d.loadRecipes, d.startMonitor, d.startSessions, d.recoverSessions, d.startRetention, d.serve,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	// Every schema of the start is compiled: the drafts' meta-schemas that
	// compiling them needed (~0.4 MB of heap) are not needed at rest. A
	// later compile (a SIGHUP, a session's output check) compiles them again
	// (docs/FOOTPRINT.md, "issue 41: idle RSS").
	jsonschema.ReleaseMetaSchemas()
	d.log.Info("hcp-edge running", "version", d.version, "state_dir", d.f.Agent.StateDir, "control_socket", d.srv.Path(),
		"watchdog_timeout", d.f.Monitor.WatchdogTimeout, "kick_every", d.f.Monitor.KickEvery, "time_scale", d.f.Agent.TimeScale,
		"capabilities", len(d.reg.All()), "recovered", d.recovered, "startup", time.Since(d.t0))

	// systemd (Type=notify): ready now that the control socket is up; the
	// watchdog is fed while the monitor answers. No-op outside systemd.
	d.sd = startNotifier(d.log, diskNotifyStatus(d.disk.State(), d.srv.Path()), func() bool { d.mon.Status(); return true })
	for {
		select {
		case <-ctx.Done():
			return d.stop()
		case <-hup:
			if err := d.reloadRecipes(); err != nil {
				d.log.Error("recipe reload (SIGHUP) failed: the recipes stay as they were", "err", err)
			}
			jsonschema.ReleaseMetaSchemas()
		}
	}
}

// daemon is one run of the agent: what the start steps built, in start
// order. A nil field was not built (its step failed or did not run).
type daemon struct {
	f       rigconfig.File
	reg     *capability.Registry
	log     *slog.Logger
	version string
	t0      time.Time
	// clock is the process clock: every stamp (state file, audit, tokens,
	// de-dup window) reads its wall time, every duration it judges its
	// monotonic time (internal/wallclock).
	clock *wallclock.Clock
	// gc raises the GC target while the inbox decides a flood (gcburst);
	// nil when GOGC is set in the environment.
	gc *gcburst.Governor

	// openState
	disk    *diskspace.Watcher // the state directory's free space (disk.go)
	hold    *clocksync.Hold    // new sessions held until the clock is synchronised
	st      *store.Store
	alerts  alerting      // alerts to people (alerts.go); their queue is in st
	mx      *agentMetrics // nil without agent.metrics_listen
	key     *atrest.Key   // nil without agent.at_rest_key_file
	tokens  *token.Authority
	revoked *token.Revocations
	// openRig
	env  *envelope.Envelope
	in   *rigconfig.Instruments
	acts *budget.ActionCounter
	il   *envelope.Interlock
	iv   *envelope.Invoker // the tool pipeline: the only caller of the interlock
	// loadRecipes (and SIGHUP)
	base  []*capability.Capability // the declarations the agent started with
	known recipes.Known            // name@version → sha256 of every recipe loaded
	xs    []executor.Executor      // the executors of the registry's capabilities
	// startMonitor
	mon       *envelope.Monitor
	monClosed bool
	// startSessions
	hub       *hub.Hub
	up        *uplink.Uplink // nil without agent.amqp.url
	models    *modelAnalyzer // the analyse phase's model router
	eng       *engine.Engine
	engClosed bool
	// recoverSessions
	recovered int
	// startRetention
	prune *retention.Pruner
	// serve
	h    *handler
	srv  *control.Server
	dash *dashboard.Server // nil without agent.dashboard_listen
	sd   *notifier
}

// tuneRuntime sets GOMAXPROCS and GOGC for the daemon unless the
// environment sets them, and returns the governor that raises GOGC for a
// burst of commands (nil when GOGC is the environment's).
func tuneRuntime(log *slog.Logger) *gcburst.Governor {
	if procs := envelope.MonitorMinProcs; os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < procs {
		// A single-core host: the Modbus RTU transport's reads block an OS
		// thread (and its P) in select(2), and the monitor's furnace poll
		// and trip procedure must not wait for the runtime to take it back.
		// See envelope.MonitorMinProcs.
		runtime.GOMAXPROCS(procs)
		log.Debug("GOMAXPROCS raised for the monitor", "procs", procs)
	}
	if os.Getenv("GOGC") != "" {
		return nil // the environment's GOGC wins, bursts included
	}
	// The daemon's live heap is about 1 MB at rest and a few MB during a
	// session: GOGC 100 lets the heap grow to the runtime's 4 MB floor
	// before collecting; 50 halves the floor and keeps about 2 MB less
	// resident, for a collection (about 1 ms of CPU) every few seconds at
	// rest (docs/FOOTPRINT.md). A flood of commands raises it while it
	// lasts (gcburst).
	debug.SetGCPercent(daemonGOGC)
	return gcburst.New(gcburst.Opts{Rest: daemonGOGC, Logger: log})
}

// openState opens the state directory and the state file, the metrics
// (counting from here), the at-rest key (before any instrument is
// touched), the session token key, and puts the tokens of sessions closed
// by a previous run back on the revocation list.
func (d *daemon) openState(ctx context.Context) error {
	f := d.f
	if err := os.MkdirAll(f.Agent.StateDir, 0o750); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	var err error
	if d.disk, err = openDisk(f, f.Agent.ControlSocket, d.log, d.alerts.disk); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	path := filepath.Join(f.Agent.StateDir, rigconfig.StateFile)
	so := store.DefaultOpts()
	so.WriteFailed = d.disk.Failed // releases the disk reserve: the write is tried once more
	so.Clock = d.clock.Now
	st, err := store.Open(path, so)
	if err != nil {
		return fmt.Errorf("state file %s (another daemon running?): %w", path, err)
	}
	d.st = st
	if err := d.alerts.start(f.Alerts, st.DB(), st.Audit(), d.clock.Now, d.log); err != nil { // alerts.go
		return err
	}
	d.mx = newAgentMetrics(f, st, d.log) // nil without agent.metrics_listen (metrics.go)
	if d.key, err = loadAtRestKey(f.Agent.AtRestKeyFile, d.log); err != nil {
		return err
	}
	// The events of T3/T4 sessions, and their messages waiting in the
	// outbox (uplink), are sealed under it (nil: such sessions are refused).
	st.SetAtRest(d.key)
	priv, err := token.LoadOrCreateKey(filepath.Join(f.Agent.StateDir, rigconfig.TokenKeyFile))
	if err != nil {
		return fmt.Errorf("session token key: %w", err)
	}
	topts := token.DefaultOpts()
	topts.Clock = d.clock
	if d.tokens, err = token.New(priv, topts); err != nil {
		return err
	}
	d.revoked = token.NewRevocations(d.clock)
	// The kernel's word on the clock: new sessions wait for it when
	// agent.hold_until_clock_synced; nothing of the rig's safety does.
	d.hold = clocksync.NewHold(nil, f.Agent.HoldsUntilClockSynced())
	if r := d.hold.Check(); r.Holding {
		d.log.Warn("system clock not synchronised: new sessions are held until it is (agent.hold_until_clock_synced); the interlock, the monitor and the e-stop run",
			"clock", r.State.String(), "max_error", r.MaxError)
	} else {
		d.log.Info("system clock", "sync", r.State.String(), "hold_enabled", r.HoldEnabled)
	}
	return revokeClosed(ctx, st, d.revoked, d.clock.Now())
}

// verifyUnits reads every instrument's identity and the settings its
// profile depends on (device.Verifier) and refuses the start on a unit that
// cannot be read or differs from its profile, naming the instrument, the
// setting, what was found and what the profile expects.
func (d *daemon) verifyUnits(ctx context.Context) error {
	fs, err := d.in.Verify(ctx, rigconfig.VerifyTimeout)
	for _, f := range fs {
		if f.OK {
			d.log.Info("unit checked against its profile", "instrument", f.Instrument, "setting", f.Setting, "found", f.Found)
		} else {
			d.log.Error("unit differs from its profile", "instrument", f.Instrument, "setting", f.Setting, "found", f.Found, "expected", f.Expected)
		}
	}
	if err != nil {
		return fmt.Errorf("checking the units against their profiles: %w", err)
	}
	if err := device.MismatchError(fs); err != nil {
		return fmt.Errorf("refusing to start (fix the unit or the profile): %w", err)
	}
	return nil
}

// openRig compiles the envelope, builds the instruments (the relay
// de-energised), the interlock that checks every action against the
// envelope and the session's token, the tool pipeline over it, and arms
// the furnace's comms watchdog.
func (d *daemon) openRig(ctx context.Context) error {
	f := d.f
	var err error
	if d.env, err = f.CompileEnvelope(); err != nil {
		return err
	}
	in, err := rigconfig.Build(f.Rig)
	if err != nil {
		return err
	}
	d.in = in
	if err := d.verifyUnits(ctx); err != nil { // before the first write: a unit that differs from its profile is never driven
		return err
	}
	if _, err := in.Relay(); err != nil { // de-energised at start
		return err
	}
	// The watchdog relay's heartbeat, before anything may energise the
	// relay; it lives until the instruments close, not with intake.
	if err := in.StartHeartbeat(context.WithoutCancel(ctx), d.log); err != nil {
		return err
	}
	if err := in.StartInputs(ctx); err != nil {
		return err
	}
	rig, err := rigconfig.InterlockRig(in)
	if err != nil {
		return err
	}
	authz, err := token.NewAuthorizer(d.tokens, d.env, d.revoked)
	if err != nil {
		return err
	}
	iopts := envelope.DefaultInterlockOpts()
	iopts.Logger = d.log
	iopts.TimeScale = f.Agent.TimeScale // rates of change and purges on the rig's time, as the recipe check judges them
	d.acts = budget.NewActionCounter()  // the actions budget counts what the interlock executed (session/budget)
	if d.il, err = envelope.NewInterlock(d.env, rig, authz, d.acts.Auditor(d.alerts.auditor(d.mx.auditor(audit.Interlock{Log: d.st.Audit()}))), iopts); err != nil {
		return err
	}
	if d.iv, err = newInvoker(d.il, f.Rig.Layout(), f.Agent.TimeScale); err != nil { // the only caller of the interlock (engine.go)
		return err
	}
	for _, tc := range in.Zones { // every heated zone's controller (in.Furnace is the first)
		if err := d.initController(ctx, tc); err != nil {
			return err
		}
	}
	return nil
}

// initAttempts bounds initUnit's tries of a unit that does not answer in
// time (within initController's 2 s).
const initAttempts = 3

// initer is what initUnit needs of a controller (*regmap.Controller).
type initer interface {
	Init(ctx context.Context) ([]regmap.InitWrite, error)
	String() string
}

// initUnit runs tc.Init and, while the unit missed an answer (a loaded
// host, a noisy line: device.ErrTimeout) and ctx allows, asks again, as
// rigbuild.Verify asks, up to initAttempts in all: Init is idempotent (a
// write toward safe, modes only where they differ). It returns every
// attempt's writes.
func initUnit(ctx context.Context, tc initer, log *slog.Logger) ([]regmap.InitWrite, error) {
	wrote, err := tc.Init(ctx)
	for n := 1; n < initAttempts && errors.Is(err, device.ErrTimeout) && ctx.Err() == nil; n++ {
		log.Warn("controller init: no answer in time, asking again", "instrument", tc.String(), "attempt", n+1, "err", err)
		var again []regmap.InitWrite
		again, err = tc.Init(ctx)
		wrote = append(wrote, again...)
	}
	return wrote, err
}

// initController initialises a heated zone's controller (heater off, then
// the mode its profile's roles assume), audits what the agent changed on
// the unit, and arms its comms watchdog where it has one.
func (d *daemon) initController(ctx context.Context, tc *regmap.Controller) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// Heater off, then the mode the profile's roles assume; what the agent
	// itself changed on the unit is audited.
	wrote, err := initUnit(wctx, tc, d.log)
	for _, w := range wrote {
		target := fmt.Sprintf("%s %s=%g", tc, w.Channel, w.Value)
		if w.NonVolatile {
			target += " (non-volatile)"
		}
		b, _ := json.Marshal(map[string]any{"op": "init", "outcome": "done", "instrument": tc.String(),
			"channel": w.Channel, "value": w.Value, "non_volatile": w.NonVolatile, "target": target})
		if _, aerr := d.st.Audit().Append(context.WithoutCancel(ctx), audit.Entry{Kind: audit.KindControl, Detail: string(b)}); aerr != nil {
			return fmt.Errorf("audit the furnace's init: %w", aerr)
		}
	}
	if err != nil {
		return fmt.Errorf("furnace: %w", err)
	}
	if tc.HasWatchdog() { // else the relay watchdog is the dead-agent path (rigconfig refuses a rig with neither)
		if err := tc.ConfigureWatchdog(wctx, d.f.Monitor.WatchdogTimeout); err != nil {
			return fmt.Errorf("furnace watchdog: %w", err)
		}
	}
	return nil
}

// startMonitor starts the trip monitor (which kicks the furnace's
// watchdog). It runs on a context of its own: it must outlive intake so
// that the rig stays watched while the control socket drains.
func (d *daemon) startMonitor(ctx context.Context) error {
	f := d.f
	mon, err := envelope.NewMonitor(d.il, envelope.MonitorOpts{FurnaceEvery: f.Monitor.FurnaceEvery,
		OtherEvery: f.Monitor.OtherEvery, KickEvery: f.Monitor.KickEvery, Logger: d.log, OnPoll: d.mx.onPoll()})
	if err != nil {
		return err
	}
	if err := mon.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	d.mon = mon
	return nil
}

// startSessions builds the session side: the hub (results and local
// watchers), the uplink (whose outbox in the state file is the store's
// Queue: every step queues its messages in its own transaction), and the
// engine with its gate. From here the inbound path broker → gate → engine
// → outbox is wired; the uplink starts taking commands in serve.
func (d *daemon) startSessions(context.Context) error {
	f := d.f
	var err error
	if d.hub, err = hub.New(filepath.Join(f.Agent.StateDir, rigconfig.ResultsDir), hub.SealerFor(d.st, d.key), d.log); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	if err := uplink.MigrateOutboxFile(f.Agent.StateDir, d.st, d.log); err != nil { // an earlier version's outbox.db
		return err
	}
	if d.up, err = uplink.New(f, d.st, d.disk, d.clock, d.log); err != nil { // nil without agent.amqp.url (uplink.go)
		return err
	}
	if d.up != nil {
		d.st.SetQueue(d.up)
	}
	if d.models, err = newModelAnalyzer(f, d.st.Audit(), d.log); err != nil { // models.go
		return err
	}
	d.eng, err = newEngine(f, d.st, d.st.Audit(), d.mx.gateRecorder, d.key, d.reg, d.tokens, d.revoked, d.il, d.iv, d.mon,
		d.acts, d.alerts.outbound(d.hub), d.up, d.clock, d.hold.Reason, d.xs, d.models, d.log)
	return err
}

// recoverSessions recovers the sessions a previous run left. Recovery
// judges the rig from the monitor's cache: with sessions to recover, it
// first waits (at most the comms timeout) until every instrument has been
// read once, or a channel not read yet would count as lost.
func (d *daemon) recoverSessions(ctx context.Context) error {
	if act, err := d.st.Sessions(ctx, true); err == nil && len(act) > 0 {
		wctx, wcancel := context.WithTimeout(ctx, d.env.CommsTimeout())
		if err := d.mon.WaitFirstReadings(wctx); err != nil {
			d.log.Warn("recovery: not every instrument answered within the comms timeout", "err", err)
		}
		wcancel()
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	recs, err := d.eng.Recover(rctx)
	rcancel()
	if err != nil {
		return fmt.Errorf("session recovery: %w", err)
	}
	for _, r := range recs {
		d.log.Warn("session recovered", "session", r.SessionID, "from", r.From, "decision", r.Decision, "err", r.Err)
		d.alerts.recovered(r, d.t0)
	}
	d.recovered = len(recs)
	return nil
}

// serve opens intake: the uplink's inbox handed the engine, discovery and
// artifact fetch over the broker, the control socket, then the uplink (the
// broker may be down: the outbox holds), the metrics endpoint and the
// dashboard.
func (d *daemon) serve(context.Context) error {
	f := d.f
	if err := d.up.Attach(f, d.eng, d.gc.Burst); err != nil {
		return err
	}
	ops, err := operators.New(f.Operators, nil)
	if err != nil {
		return fmt.Errorf("operators: %w", err)
	}
	if !ops.Configured() {
		d.log.Warn("NO OPERATORS CONFIGURED: only root holds roles on the control socket (arm, reset, submit, approve, release); every other member of the socket's group may e-stop and read, nothing more. Add an operators section: docs/SAFETY.md, Operators and roles",
			"socket", f.Agent.ControlSocket)
	}
	if f.Agent.ApprovalsRequired["R4"] > 1 && !ops.Configured() {
		d.log.Warn("R4 tasks need approvals by different OS users (agent.approvals_required), and only root holds the approve role: no R4 task can be approved until an operators section names approvers",
			"R4", f.Agent.ApprovalsRequired["R4"])
	}
	d.h = &handler{il: d.il, iv: d.iv, mon: d.mon, in: d.in, log: d.log, up: d.up, disk: d.disk, hold: d.hold, ops: ops,
		sess: &sessions{eng: d.eng, st: d.st, hub: d.hub, stateDir: f.Agent.StateDir, log: d.log, version: d.version, rig: f.Rig}}
	d.up.ServeExtensions(f, d.reg, d.env, d.h.sess.fetchable, d.eng.Executor) // discovery, artifact fetch and previews over the broker
	srv, err := control.Listen(f.Agent.ControlSocket, d.h, control.Opts{Logger: d.log})
	if err != nil {
		return err
	}
	if err := d.up.Start(); err != nil { // the uplink last: the broker may be down, the outbox holds
		_ = srv.Shutdown(context.Background())
		return err
	}
	if err := d.mx.start(f, d.il, d.iv, d.up, d.disk, d.models); err != nil {
		_ = srv.Shutdown(context.Background())
		return err
	}
	if d.dash, err = startDashboard(f, d.h, d.version, d.log); err != nil { // nil without agent.dashboard_listen (dashboard.go)
		_ = srv.Shutdown(context.Background())
		_ = d.mx.close(context.Background())
		return err
	}
	d.srv = srv
	d.alerts.watchBroker(d.up.Status, f.Alerts.BrokerUnreachableAfter, max(f.Alerts.BrokerUnreachableAfter/10, time.Second)) // alerts.go
	return nil
}

// stop takes the running daemon down: intake first (no new broker commands,
// the outbox keeps draining; the control socket), the dashboard, the
// metrics endpoint, the engine, the monitor, then the shutdown policy on
// the outputs. release closes the rest.
func (d *daemon) stop() (err error) {
	f := d.f
	d.sd.Stopping()
	d.log.Info("hcp-edge stopping", "policy", f.Agent.ShutdownPolicy)
	sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer scancel()
	d.up.StopIntake(sctx) // no new broker commands; the outbox keeps draining
	err = d.srv.Shutdown(sctx)
	if d.dash != nil {
		err = errors.Join(err, d.dash.Shutdown(sctx))
	}
	err = errors.Join(err, d.mx.close(sctx))
	if d.prune != nil {
		d.prune.Close() // ends after the transaction in progress, before the engine stops
	}
	d.engClosed = true
	err = errors.Join(err, d.eng.Close())
	saveToolStats(f.Agent.StateDir, d.iv.Stats(), d.log) // for `hcp-edge tools` once the daemon is gone (tools.go)
	d.monClosed = true
	err = errors.Join(err, d.mon.Close())
	switch f.Agent.ShutdownPolicy {
	case rigconfig.ShutdownSafeState:
		if serr := d.il.SafeState(sctx, "agent shutdown (policy safe_state)"); serr != nil {
			err = errors.Join(err, fmt.Errorf("shutdown policy: %w", serr))
		} else {
			d.log.Info("outputs safe (policy safe_state)")
		}
	case rigconfig.ShutdownHold:
		d.log.Warn("outputs left as they are (policy hold); the furnace watchdog drops the heater", "after", f.Monitor.WatchdogTimeout)
	}
	return err
}

// release closes, in reverse start order, what the start steps opened and
// stop did not close: the systemd notifier, the engine, the uplink
// (flushed within agent.amqp.flush_timeout), the monitor, the
// instruments, the metrics, the state file. It runs after a failed start
// too.
func (d *daemon) release() (err error) {
	if d.sd != nil {
		d.sd.Close()
	}
	if d.prune != nil {
		d.prune.Close() // a second Close returns at once
	}
	if d.eng != nil && !d.engClosed {
		_ = d.eng.Close()
	}
	err = errors.Join(err, d.up.Close()) // a nil *uplink.Uplink does nothing
	if d.mon != nil && !d.monClosed {
		_ = d.mon.Close()
	}
	if d.in != nil {
		err = errors.Join(err, d.in.Close())
	}
	_ = d.mx.close(context.Background()) // a nil *agentMetrics does nothing
	d.alerts.close()                     // before the state file it queues in
	if d.st != nil {
		err = errors.Join(err, d.st.Close())
	}
	if d.disk != nil {
		d.disk.Close()
	}
	d.gc.Stop() // a nil *gcburst.Governor does nothing
	return err
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
