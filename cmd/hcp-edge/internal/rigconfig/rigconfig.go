package rigconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"hcp-edge/cmd/hcp-edge/internal/operators"
	"hcp-edge/device"
	"hcp-edge/device/rig"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/rigbuild"
	"hcp-edge/envelope"
	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/session/gate"
	"hcp-edge/session/modelrouter"
	"hcp-edge/transport/alert"
)

// emptyRegistry lets Validate check the gate section without the
// capability declarations.
var emptyRegistry, _ = capability.NewRegistry()

// nopRecorder stands in for the audit log while Validate checks the gate
// section.
type nopRecorder struct{}

func (nopRecorder) Append(_ context.Context, e audit.Entry) (audit.Entry, error) { return e, nil }

// unjoin splits a joined error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// File is the agent's configuration file. Unknown keys are errors.
type File struct {
	Rig      Rig             `yaml:"rig"`
	Envelope envelope.Config `yaml:"envelope"`
	Monitor  Monitor         `yaml:"monitor"`
	Agent    Agent           `yaml:"agent"`
	// Gate is the L3 gate's policy: broker users, the callers' ACL, risk
	// rules. Parse starts from DefaultGate and decodes the file over it
	// (maps merge key by key; a list replaces the default list; null
	// removes an optional rule).
	Gate gate.Config `yaml:"gate"`
	// Models is the model router's registry (modelrouter.Registry); absent,
	// the two local models (ModelRegistry).
	Models []modelrouter.Model `yaml:"models"`
	// Operators maps each display name (--operator NAME) to the OS user it
	// belongs to and the roles it holds on the control socket (package
	// operators). Absent: only root holds roles; every other member of the
	// socket's group may e-stop and read, nothing more.
	Operators map[string]operators.Entry `yaml:"operators"`
	// ModelRouting is the model router's policy and budgets (routing.go).
	ModelRouting ModelRouting `yaml:"model_routing"`
	// Retention is how long closed sessions keep their data, per data
	// class, and the state directory's ceiling (retention.go).
	Retention Retention `yaml:"retention"`
	// Alerts are the receivers of alerts to people, their routes, the
	// group window and the rate limits (transport/alert; docs/ALERTS.md).
	Alerts alert.Config `yaml:"alerts"`
}

// LocalUser is the broker user, and caller id, of the local control
// socket's submit: a task submitted with hcp-edge submit is authenticated
// as this user.
const LocalUser = "local"

// DefaultGate is gate.DefaultConfig plus the local operator: broker user
// "local" is caller "local", which may submit the three shipped
// capabilities up to risk R3 and data classification T2; and the quotas a
// lab would pick (gate.DefaultQuotas: 60 submits a minute and 10 open
// sessions per caller, the local operator included).
func DefaultGate() gate.Config {
	g := gate.DefaultConfig()
	g.Quotas = gate.DefaultQuotas()
	g.BrokerUsers[LocalUser] = LocalUser
	g.Callers[LocalUser] = gate.CallerACL{Capabilities: []string{"cvd-material-synthesis", "rig-status", "leak-check"},
		MaxRiskLevel: capability.R3, MaxDataClassification: gate.T2}
	return g
}

// Monitor tunes the trip monitor and the furnace comms watchdog. Zero fields
// take the defaults of envelope.DefaultMonitorOpts.
type Monitor struct {
	FurnaceEvery time.Duration `yaml:"furnace_every"` // furnace poll period (default 50ms)
	OtherEvery   time.Duration `yaml:"other_every"`   // gauge, flows, switches, inputs (default 100ms)
	// KickEvery is the furnace watchdog kick period (default 1s). It must be
	// well below WatchdogTimeout.
	KickEvery time.Duration `yaml:"kick_every"`
	// WatchdogTimeout is written to the furnace controller at start: a
	// controller not kicked for this long drops its heater by itself
	// (default 5s; 100ms..60s).
	WatchdogTimeout time.Duration `yaml:"watchdog_timeout"`
}

// Shutdown policies: what the daemon does to the outputs when it stops.
const (
	ShutdownSafeState = "safe_state" // every output to its safe level, confirmed (the default)
	ShutdownHold      = "hold"       // leave the outputs; the furnace watchdog drops the heater
)

// Agent is the daemon's own configuration.
type Agent struct {
	// StateDir holds the state file (audit log). Default $HCP_STATE_DIR or
	// /var/lib/hcp-edge.
	StateDir string `yaml:"state_dir"`
	// ControlSocket is the local control socket (estop, status, reset, arm).
	// Default $HCP_CONTROL_SOCKET or <state_dir>/control.sock.
	ControlSocket string `yaml:"control_socket"`
	// ShutdownPolicy is safe_state (default) or hold.
	ShutdownPolicy string `yaml:"shutdown_policy"`
	// LogLevel is debug, info (default), warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text (default) or json.
	LogFormat string `yaml:"log_format"`
	// CapabilitiesDir holds the capability declarations (*.json). A
	// relative path is relative to the configuration file's directory.
	// Default: <config dir>/capabilities when it exists, else the copies
	// embedded in the binary (configs/capabilities).
	CapabilitiesDir string `yaml:"capabilities_dir"`
	// RecipesDir holds a lab's own process recipes (*.yaml,
	// docs/RECIPES.md), loaded beside the shipped ones at start and on
	// SIGHUP, each checked against the envelope. A relative path is
	// relative to the configuration file's directory. "": the shipped
	// recipes only. The directory and its files must not be writable by
	// group or others.
	RecipesDir string `yaml:"recipes_dir"`
	// TimeScale is process seconds per wall second of the session engine:
	// 1 on a real rig (the default); the simulator's time scale against
	// rig-sim (300 by default there).
	TimeScale float64 `yaml:"time_scale"`
	// ApprovalTimeout rejects a session that needs a human approval and
	// got none in time (default 1h).
	ApprovalTimeout time.Duration `yaml:"approval_timeout"`
	// RecoveryGrace is the longest outage after which a session still
	// resumes from its checkpoint at start (default 5m).
	RecoveryGrace time.Duration `yaml:"recovery_grace"`
	// HoldUntilClockSynced refuses new sessions (task_rejected
	// resource_unavailable "clock not synchronised") until the kernel has
	// reported the system clock synchronised once (adjtimex; a Raspberry
	// Pi has no real-time clock and steps to the right time when NTP
	// syncs). Default true; the interlock, the monitor and the e-stop run
	// regardless. The simulator configuration sets it false: containers
	// and CI machines often report the clock unsynchronised.
	HoldUntilClockSynced *bool `yaml:"hold_until_clock_synced"`
	// AccessTimeout denies the access request of a T4 session that no
	// operator decided in time: its caller gets task_failed access_denied
	// (default 24h).
	AccessTimeout time.Duration `yaml:"access_timeout"`
	// AccessApprovalFor is how long an access approval opens a T4
	// session's data to local reads when `hcp-edge access approve` has no
	// --for (default 24h).
	AccessApprovalFor time.Duration `yaml:"access_approval_for"`
	// AccessApprovers, when set, are the only operator names that may
	// approve or deny access to a T4 session's results. Empty: any
	// operator who can reach the control socket.
	AccessApprovers []string `yaml:"access_approvers"`
	// ApprovalsRequired is how many approvals by different OS users a task
	// of each risk level (R1..R5) needs before it runs, and (key T4) how
	// many a T4 access request needs before its results are released.
	// Defaults: R4 and R5 2 (two-person rule), every other level and T4 1.
	ApprovalsRequired map[string]int `yaml:"approvals_required"`
	// AMQP is the uplink to the HCP broker (amqp.go); no URL, no uplink.
	AMQP AMQP `yaml:"amqp"`
	// Disk is the state directory's free-space watermark and reserve
	// (disk.go).
	Disk Disk `yaml:"disk"`
	// MetricsListen is the loopback host:port of the Prometheus metrics
	// endpoint (GET /metrics), e.g. "127.0.0.1:9464". Empty (the default):
	// no endpoint. Only loopback addresses are accepted.
	MetricsListen string `yaml:"metrics_listen"`
	// DashboardListen is the host:port of the read-only dashboard (a web
	// page of readings, margins, trips, sessions and their plots, the audit
	// log's tail; docs/DASHBOARD.md), e.g. "127.0.0.1:9465". Empty (the
	// default): no dashboard, nothing runs. Loopback only unless
	// DashboardAllowLAN.
	DashboardListen string `yaml:"dashboard_listen"`
	// DashboardAllowLAN accepts a DashboardListen beyond loopback: a LAN
	// address, which belongs behind the site's firewall (the page has no
	// authentication; it only reads).
	DashboardAllowLAN bool `yaml:"dashboard_allow_lan"`
	// AtRestKeyFile holds the 32-byte AES-256 key (64 hex digits) that
	// encrypts the artifacts and checkpoint payloads of T3/T4 sessions at
	// rest (AES-GCM). The file must be mode 0600 or stricter. Empty (the
	// default): no key, and T3/T4 sessions are refused.
	AtRestKeyFile string `yaml:"at_rest_key_file"`
}

// DefaultApprovalsRequired is agent.approvals_required's default: two
// different OS users for R4 and R5, one for the rest and for a T4 release.
func DefaultApprovalsRequired() map[string]int {
	return map[string]int{"R1": 1, "R2": 1, "R3": 1, "R4": 2, "R5": 2, "T4": 1}
}

// HoldsUntilClockSynced reports agent.hold_until_clock_synced (true unless
// set false).
func (a Agent) HoldsUntilClockSynced() bool {
	return a.HoldUntilClockSynced == nil || *a.HoldUntilClockSynced
}

// DefaultStateDir is the state directory when neither the configuration nor
// $HCP_STATE_DIR names one.
const DefaultStateDir = "/var/lib/hcp-edge"

// Defaults fills the zero fields of f.Agent, f.Monitor, f.Retention and
// f.ModelRouting from the environment and the defaults: HCP_STATE_DIR and
// HCP_CONTROL_SOCKET override the file.
func (f *File) Defaults() {
	a := &f.Agent
	if d := os.Getenv("HCP_STATE_DIR"); d != "" {
		a.StateDir = d
	}
	if a.StateDir == "" {
		a.StateDir = DefaultStateDir
	}
	a.StateDir = os.ExpandEnv(a.StateDir)
	if s := os.Getenv("HCP_CONTROL_SOCKET"); s != "" {
		a.ControlSocket = s
	}
	if a.ControlSocket == "" {
		a.ControlSocket = filepath.Join(a.StateDir, "control.sock")
	}
	a.ControlSocket = os.ExpandEnv(a.ControlSocket)
	a.AtRestKeyFile = os.ExpandEnv(a.AtRestKeyFile)
	if a.ShutdownPolicy == "" {
		a.ShutdownPolicy = ShutdownSafeState
	}
	if a.LogLevel == "" {
		a.LogLevel = "info"
	}
	if a.LogFormat == "" {
		a.LogFormat = "text"
	}
	if a.TimeScale == 0 {
		a.TimeScale = 1
	}
	if a.ApprovalTimeout == 0 {
		a.ApprovalTimeout = time.Hour
	}
	if a.RecoveryGrace == 0 {
		a.RecoveryGrace = 5 * time.Minute
	}
	if a.AccessTimeout == 0 {
		a.AccessTimeout = 24 * time.Hour
	}
	if a.AccessApprovalFor == 0 {
		a.AccessApprovalFor = 24 * time.Hour
	}
	if a.ApprovalsRequired == nil {
		a.ApprovalsRequired = map[string]int{}
	}
	for k, n := range DefaultApprovalsRequired() {
		if _, ok := a.ApprovalsRequired[k]; !ok {
			a.ApprovalsRequired[k] = n
		}
	}
	a.AMQP.defaults()
	a.Disk.defaults()
	f.Retention.defaults()
	f.Alerts.Defaults()
	f.ModelRouting.defaults()
	m := &f.Monitor
	if m.FurnaceEvery == 0 {
		m.FurnaceEvery = 50 * time.Millisecond
	}
	if m.OtherEvery == 0 {
		m.OtherEvery = 100 * time.Millisecond
	}
	if m.KickEvery == 0 {
		m.KickEvery = time.Second
	}
	if m.WatchdogTimeout == 0 {
		m.WatchdogTimeout = 5 * time.Second
	}
}

// Validate checks the agent, monitor, models, model_routing, operators,
// retention and gate sections (after Defaults).
func (f File) Validate() error {
	errs := append(f.validateModels(), f.ModelRouting.Check()...)
	errs = append(errs, f.pollCostErrors()...)
	bad := func(key, format string, a ...any) { errs = append(errs, fmt.Errorf(key+": "+format, a...)) }
	m := f.Monitor
	if m.FurnaceEvery < time.Millisecond || m.OtherEvery < time.Millisecond {
		bad("monitor", "furnace_every and other_every must be at least 1ms")
	}
	if m.KickEvery < 0 {
		bad("monitor.kick_every", "%v is negative (0 disables kicking)", m.KickEvery)
	}
	if m.WatchdogTimeout < 100*time.Millisecond || m.WatchdogTimeout > 60*time.Second {
		bad("monitor.watchdog_timeout", "%v is outside the controller's 100ms..60s", m.WatchdogTimeout)
	} else if m.KickEvery > 0 && 2*m.KickEvery > m.WatchdogTimeout {
		bad("monitor.kick_every", "%v: kick at least twice per watchdog_timeout (%v)", m.KickEvery, m.WatchdogTimeout)
	}
	switch f.Agent.ShutdownPolicy {
	case ShutdownSafeState, ShutdownHold:
	default:
		bad("agent.shutdown_policy", "%q is neither %s nor %s", f.Agent.ShutdownPolicy, ShutdownSafeState, ShutdownHold)
	}
	switch f.Agent.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("agent.log_level", "%q is not debug, info, warn or error", f.Agent.LogLevel)
	}
	switch f.Agent.LogFormat {
	case "text", "json":
	default:
		bad("agent.log_format", "%q is neither text nor json", f.Agent.LogFormat)
	}
	if ts := f.Agent.TimeScale; !(ts >= 1 && ts <= 10000) {
		bad("agent.time_scale", "%v is outside 1..10000 (1 on a real rig)", ts)
	} else if ts != 1 && f.Rig.GPIO.Source == "host" {
		// The interlock's rates of change and purge durations count the
		// rig's time: on real hardware a time scale would loosen them.
		bad("agent.time_scale", "%v with gpio source host: a real rig runs at time scale 1 (the interlock's rate limits and purge times count the rig's time)", ts)
	}
	if f.Agent.ApprovalTimeout < time.Second {
		bad("agent.approval_timeout", "%v is shorter than 1s", f.Agent.ApprovalTimeout)
	}
	if f.Agent.RecoveryGrace < 0 {
		bad("agent.recovery_grace", "%v is negative", f.Agent.RecoveryGrace)
	}
	if f.Agent.AccessTimeout < time.Second {
		bad("agent.access_timeout", "%v is shorter than 1s", f.Agent.AccessTimeout)
	}
	if f.Agent.AccessApprovalFor < time.Second {
		bad("agent.access_approval_for", "%v is shorter than 1s", f.Agent.AccessApprovalFor)
	}
	for i, name := range f.Agent.AccessApprovers {
		if strings.TrimSpace(name) == "" || strings.TrimSpace(name) != name {
			bad(fmt.Sprintf("agent.access_approvers[%d]", i), "%q: an operator name, without surrounding spaces", name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Agent.ApprovalsRequired)) {
		n := f.Agent.ApprovalsRequired[k]
		if _, ok := DefaultApprovalsRequired()[k]; !ok {
			bad("agent.approvals_required."+k, "%q is not a risk level R1..R5 nor T4", k)
		} else if n < 1 || n > 5 {
			bad("agent.approvals_required."+k, "%d is outside 1..5", n)
		}
	}
	for _, e := range operators.CheckEntries(f.Operators) {
		k, m, _ := strings.Cut(e.Error(), ": ")
		bad(k, "%s", m)
	}
	f.Agent.AMQP.validate(bad)
	f.Agent.Disk.validate(bad)
	f.Retention.validate(bad)
	errs = append(errs, f.Alerts.Check()...) // each at its alerts.KEY
	if l := f.Agent.MetricsListen; l != "" {
		if err := CheckLoopback(l); err != nil {
			bad("agent.metrics_listen", "%v", err)
		}
	}
	if l := f.Agent.DashboardListen; l != "" {
		if f.Agent.DashboardAllowLAN {
			if _, port, err := net.SplitHostPort(l); err != nil {
				bad("agent.dashboard_listen", "%q: want host:port: %v", l, err)
			} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
				bad("agent.dashboard_listen", "%q: port %q is not 1..65535", l, port)
			}
		} else if err := CheckLoopback(l); err != nil {
			bad("agent.dashboard_listen", "%v (a LAN address needs agent.dashboard_allow_lan: true, behind the site's firewall)", err)
		}
	} else if f.Agent.DashboardAllowLAN {
		bad("agent.dashboard_allow_lan", "true without agent.dashboard_listen")
	}
	if _, err := gate.New(f.Gate, emptyRegistry, nopRecorder{}, gate.Opts{}); err != nil {
		for _, e := range unjoin(err) {
			msg := strings.TrimPrefix(e.Error(), gate.ErrInvalidConfig.Error()+": ")
			if k, m, ok := strings.Cut(msg, ": "); ok && !strings.ContainsAny(k, " \t") {
				bad("gate."+k, "%s", m)
			} else {
				bad("gate", "%s", msg)
			}
		}
	}
	return errors.Join(errs...)
}

// Rig is the rig section (device/rig's Config, the one model every layer
// reads) with the instrument profiles it names, loaded once by Parse.
type Rig struct {
	rig.Config `yaml:",inline"`

	profiles Profiles        // loaded by Parse (layout.go)
	refused  map[string]bool // IDs of the profiles whose files were refused
}

// The rig section's parts, device/rig's types.
type (
	Bus          = rig.Bus          // one Modbus line
	ModbusDevice = rig.ModbusDevice // an instrument on a named bus
	Output       = rig.Output       // one on/off output of the layout
	Input        = rig.Input        // one binary input of the layout
	Serial       = rig.Serial       // an instrument on its own serial port
	Gauge        = rig.Gauge        // the pressure gauge controller
	MFC          = rig.MFC          // one mass-flow controller and its gas line
	Raman        = rig.Raman        // the spectrometer
	GPIO         = rig.GPIO         // the e-stop, leak and relay lines
)

// Output roles (device/rig's).
const (
	RolePump     = rig.RolePump
	RoleGate     = rig.RoleGate
	RoleVent     = rig.RoleVent
	RoleScrubber = rig.RoleScrubber
	RoleDoor     = rig.RoleDoor
)

// Load reads a configuration file strictly: unknown keys are errors.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("rigconfig: %w", err)
	}
	f, err := Parse(bytes.NewReader(b))
	if err != nil {
		return File{}, fmt.Errorf("rigconfig: %s: %w", path, inFormatWords(path, syntaxAtItsLine(b, err)))
	}
	return f, nil
}

var (
	syntaxErrorRE = regexp.MustCompile(`^yaml: line \d+: `)
	unknownKeyRE  = regexp.MustCompile(`field (\S+) not found in type \S+`)
	wrongKindRE   = regexp.MustCompile(`cannot unmarshal !!(\w+)( .*)? into \S+`)
)

// inFormatWords rewrites the decoder's messages of a configuration that
// does not decode without the Go types they name ("field x not found in
// type rigconfig.Rig" is "unknown key x"); other errors pass.
func inFormatWords(path string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		m = unknownKeyRE.ReplaceAllString(m, "unknown key $1")
		msgs[i] = wrongKindRE.ReplaceAllStringFunc(m, func(w string) string {
			sub := wrongKindRE.FindStringSubmatch(w)
			what := strings.TrimSpace(sub[2])
			switch {
			case what != "":
			case sub[1] == "seq":
				what = "a list"
			case sub[1] == "map":
				what = "a mapping"
			default:
				what = "this value"
			}
			return what + " is not a value of this key's kind"
		})
	}
	return &decodeError{msg: fmt.Sprintf("yaml: %s (hcp-edge config check %s says what each key wants)", strings.Join(msgs, "; "), path), err: err}
}

// decodeError is a decoder's error in the configuration's words; it
// unwraps to the decoder's own.
type decodeError struct {
	msg string
	err error
}

func (e *decodeError) Error() string { return e.msg }
func (e *decodeError) Unwrap() error { return e.err }

// syntaxAtItsLine renumbers a YAML syntax error of data by the line the
// mistake is on (the yaml package numbers it by the line where the
// construct around it began: profile.SyntaxLine); other errors pass.
func syntaxAtItsLine(data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) || !syntaxErrorRE.MatchString(err.Error()) {
		return err
	}
	return fmt.Errorf("yaml: line %d: %s", profile.SyntaxLine(data, err), syntaxErrorRE.ReplaceAllString(err.Error(), ""))
}

// Parse decodes a configuration strictly and expands ${sim_dir} and
// environment variables in paths.
func Parse(r io.Reader) (File, error) {
	f := File{Gate: DefaultGate()}
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return File{}, err
	}
	f.Rig.Expand()
	f.Defaults()
	f.Gate.GasHazards = f.Rig.HazardOf() // the gate's hazards rules read the layout
	perr := f.Rig.loadProfiles()
	return f, errors.Join(perr, f.Rig.Validate(), f.Validate(), errors.Join(f.toxicInterlockErrors()...))
}

// Validate checks references and values without touching hardware: the
// layout's structure (device/rig) and what the profiles decide. A rig of
// any number of heated zones is driven: the envelope judges each zone,
// InterlockRig hands it every zone's controller and the executor drives
// the zone each phase names (issue 42).
func (r Rig) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("rig.%s: "+format, append([]any{key}, a...)...))
	}
	r.Check(bad)
	rigbuild.Check(r.Config, r.profiles, r.refused, bad)
	return errors.Join(errs...)
}

// ParseFlow reads a flow written as "<value> <unit>", e.g. "500 sccm" or
// "0.5 slm" (rig.ParseFlow).
func ParseFlow(s string) (device.Flow, error) { return rig.ParseFlow(s) }

// CheckLoopback reports whether addr is a host:port on the loopback
// interface ("127.0.0.1:9464", "[::1]:9464", "localhost:9464"): the metrics
// endpoint is never exposed beyond the host.
func CheckLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want host:port: %v", addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port %q is not 1..65535", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: %q is not a loopback address (127.0.0.1, ::1 or localhost)", addr, host)
	}
	return nil
}
