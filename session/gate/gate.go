package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"hcp-edge/device/catalog"
	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/transport/wire"
)

// Outcome is what the gate decided.
type Outcome string

// Outcomes.
const (
	Accepted        Outcome = "accepted"         // issue a token and start the session
	PendingApproval Outcome = "pending_approval" // hold the session until an operator decides
	Rejected        Outcome = "rejected"         // reply task_rejected with Rejection.Payload()
)

// Protection is what the agent offers to T3/T4 data: the data
// classification check admits T3 and T4 only with both.
type Protection struct {
	UplinkTLS bool // the broker connection is TLS
	// AtRestKey: an at-rest key is configured, and the engine seals the
	// session's artifacts and checkpoint payloads under it (session/atrest).
	AtRestKey bool
}

// Request is one task_submit handed to the gate.
type Request struct {
	MessageID  string // the task_submit's message_id
	SessionID  string // the id the session will have if admitted ("": audit under MessageID)
	BrokerUser string // the broker-validated (SASL) user the message came from
	Submit     *wire.TaskSubmit
	// Running is the number of non-terminal sessions of the requested
	// capability, supplied by the engine.
	Running int
	// BusyResources are the resource types in use by other sessions.
	BusyResources []string
	// OpenSessions is the number of non-terminal sessions of the caller,
	// supplied by the engine when the caller has an open_sessions quota
	// (OpenSessionsLimited).
	OpenSessions int
}

// Decision is the gate's verdict on one Request. Accepted and
// PendingApproval decisions carry what the session token needs.
type Decision struct {
	Outcome    Outcome
	SessionID  string
	MessageID  string
	CallerID   string
	Capability *capability.Capability // nil when rejected before resolution
	// RiskLevel is the assessed risk: the approved one unless Rejected.
	RiskLevel          capability.RiskLevel
	DataClassification Classification
	// AuditedAccess: T2 and above, every access to the session's data is
	// audited (audit.KindDataAccess).
	AuditedAccess bool
	// Encrypted: T3 and above, artifacts and checkpoints are encrypted at
	// rest.
	Encrypted    bool
	Permissions  []catalog.Permission
	MaxDuration  time.Duration // the task's max_duration bounded by the capability's
	AbortTimeout time.Duration // the capability's (0 when not declared)
	Fired        []Fired       // the risk rules that fired
	Rejection    *Rejection    // set when Rejected
}

// Recorder is where decisions are audited; *audit.Log implements it.
type Recorder interface {
	Append(ctx context.Context, e audit.Entry) (audit.Entry, error)
}

// Opts are the gate's collaborators.
type Opts struct {
	Clock      func() time.Time // the unattended-hours clock; time.Now if nil
	Protection Protection
}

// Gate is the L3 admission gate. It is safe for concurrent use.
type Gate struct {
	cfg   Config
	reg   *capability.Registry
	rec   Recorder
	clock func() time.Time
	prot  Protection
	wins  []window
	loc   *time.Location
	// window counts each caller's submits for Quotas.SubmitsPerMinute.
	window submitWindow
}

// New checks cfg and returns the gate over the capabilities of reg,
// recording every decision in rec.
func New(cfg Config, reg *capability.Registry, rec Recorder, opts Opts) (*Gate, error) {
	if reg == nil || rec == nil {
		return nil, fmt.Errorf("gate: New needs a capability registry and a recorder")
	}
	wins, loc, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if cfg.DefaultDataClassification == "" {
		cfg.DefaultDataClassification = T1
	}
	if cfg.DefaultMaxDuration == 0 {
		cfg.DefaultMaxDuration = time.Hour
	}
	if opts.Clock == nil {
		opts.Clock = time.Now // its monotonic reading times the quota window
	}
	return &Gate{cfg: cfg, reg: reg, rec: rec, clock: opts.Clock, prot: opts.Protection, wins: wins, loc: loc}, nil
}

// Protection returns what the gate was told the agent offers T3/T4 data
// (Opts.Protection): the engine checks it holds the key the gate promises.
func (g *Gate) Protection() Protection { return g.prot }

// auditDetail is the JSON of a gate_decision audit entry.
type auditDetail struct {
	MessageID          string               `json:"message_id,omitempty"`
	BrokerUser         string               `json:"broker_user,omitempty"`
	CallerID           string               `json:"caller_id,omitempty"`
	Capability         string               `json:"capability,omitempty"`
	Version            string               `json:"version,omitempty"`
	Outcome            Outcome              `json:"outcome"`
	ReasonCode         ReasonCode           `json:"reason_code,omitempty"`
	Message            string               `json:"message,omitempty"`
	RiskLevel          capability.RiskLevel `json:"risk_level,omitempty"`
	Suggestion         string               `json:"suggestion,omitempty"`
	Paths              []string             `json:"paths,omitempty"`
	Fired              []Fired              `json:"fired,omitempty"`
	DataClassification Classification       `json:"data_classification,omitempty"`
	AuditedAccess      bool                 `json:"audited_access,omitempty"`
	Permissions        []catalog.Permission `json:"permissions,omitempty"`
}

// Decide runs the L3 checks on req in the spec's order and records the
// decision (audit.KindGate) under req.SessionID, or req.MessageID without
// one. A refusal is a Decision with Outcome Rejected and a *Rejection. A
// non-nil error means the decision could not be recorded: the engine must
// not act on it (it fails closed).
func (g *Gate) Decide(ctx context.Context, req Request) (Decision, error) {
	return g.DecideWith(ctx, req, g.rec)
}

// DecideWith is Decide recording the decision in rec instead of the gate's
// own Recorder: the engine passes its store transaction, so the decision is
// audited in the same commit that creates (or refuses) the session.
func (g *Gate) DecideWith(ctx context.Context, req Request, rec Recorder) (Decision, error) {
	d := g.decide(req)
	det := auditDetail{MessageID: req.MessageID, BrokerUser: req.BrokerUser, CallerID: d.CallerID,
		Outcome: d.Outcome, RiskLevel: d.RiskLevel, Fired: d.Fired, DataClassification: d.DataClassification,
		AuditedAccess: d.AuditedAccess, Permissions: d.Permissions}
	if d.Capability != nil {
		det.Capability, det.Version = d.Capability.Name, d.Capability.SemVer.String()
	} else if req.Submit != nil {
		det.Capability, det.Version = truncate(req.Submit.Capability), truncate(req.Submit.CapabilityVersion)
	}
	if r := d.Rejection; r != nil {
		det.ReasonCode, det.Message, det.Suggestion, det.Paths = r.Code, r.Message, r.Suggestion, r.Paths
		det.RiskLevel = r.AssessedRiskLevel
	}
	b, err := json.Marshal(det)
	if err != nil {
		return d, fmt.Errorf("gate: encode audit entry: %w", err)
	}
	key := d.SessionID
	if key == "" {
		key = d.MessageID
	}
	if _, err := rec.Append(ctx, audit.Entry{SessionID: key, Kind: audit.KindGate, Detail: string(b)}); err != nil {
		return d, fmt.Errorf("gate: record decision on %s: %w", key, err)
	}
	return d, nil
}

func truncate(s string) string {
	if len(s) > 128 {
		return s[:128] + "…"
	}
	return s
}

func reject(d Decision, code ReasonCode, cause error, format string, args ...any) Decision {
	d.Outcome = Rejected
	d.Rejection = &Rejection{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
	return d
}

// admission is one decision in progress: the Decision being built and what
// the steps of decide have established so far.
type admission struct {
	req    Request
	s      *wire.TaskSubmit
	d      Decision
	caller string
	c      *capability.Capability
	acl    CallerACL
	class  Classification
	floor  capability.RiskLevel
	doc    map[string]any // the task's inputs, decoded
	level  capability.RiskLevel
}

// step is one check of decide, in the spec's order. It records in a what it
// establishes and returns true when a.d is final (a rejection), false to go
// on.
type step func(g *Gate, a *admission) (done bool)

// decide runs the L3 checks in the spec's order, each a step that may end
// the admission with a rejection; approve (9) ends one that passed them all.
func (g *Gate) decide(req Request) Decision {
	a := &admission{req: req, s: req.Submit, d: Decision{SessionID: req.SessionID, MessageID: req.MessageID}}
	for _, st := range [...]step{
		(*Gate).authenticate,      // 1. caller authenticated
		(*Gate).checkQuotas,       //    and within its quotas (quota.go)
		(*Gate).resolveCapability, // 2. capability known, version range satisfied
		(*Gate).authorise,         // 3. caller permitted: capability, floor risk, data classification
		(*Gate).validateInputs,    // 4. inputs valid against the declared schema
		(*Gate).checkOutput,       //    and an expected_output the capability can meet (expected.go)
		(*Gate).checkSemantics,    // 5. what JSON Schema cannot express
		(*Gate).assessRisk,        // 6. floor, input-driven escalation, context
		(*Gate).protectData,       // 7. data classification handling
		(*Gate).checkConcurrency,  // 8. concurrency
	} {
		if st(g, a) {
			return a.d
		}
	}
	return g.approve(a) // 9. human approval
}

// rejectWith makes a.d a rejection and ends the admission.
func (a *admission) rejectWith(code ReasonCode, cause error, format string, args ...any) bool {
	a.d = reject(a.d, code, cause, format, args...)
	return true
}

// authenticate: the message carries a payload and a broker-validated user
// mapped to the caller the task names.
func (g *Gate) authenticate(a *admission) bool {
	s, req := a.s, a.req
	if s == nil {
		return a.rejectWith(ReasonInvalidInput, nil, "no task_submit payload")
	}
	caller, ok := g.cfg.BrokerUsers[req.BrokerUser]
	switch {
	case req.BrokerUser == "":
		return a.rejectWith(ReasonUnauthorized, nil, "the message carries no broker-validated user")
	case !ok:
		return a.rejectWith(ReasonUnauthorized, nil, "broker user %q is not mapped to any caller", truncate(req.BrokerUser))
	case caller != s.CallerID:
		return a.rejectWith(ReasonUnauthorized, nil, "broker user %q may not act as caller %q", truncate(req.BrokerUser), truncate(s.CallerID))
	}
	a.caller, a.d.CallerID = caller, caller
	return false
}

// resolveCapability: the capability is known and a version of it satisfies
// the requested range.
func (g *Gate) resolveCapability(a *admission) bool {
	c, err := g.reg.Resolve(a.s.Capability, a.s.CapabilityVersion)
	if err != nil {
		a.rejectWith(ReasonInvalidInput, errors.Join(ErrUnknownCapability, err), "%v", err)
		a.d.Rejection.Paths = []string{"/capability"}
		if !errors.Is(err, capability.ErrUnknownCapability) {
			a.d.Rejection.Paths = []string{"/capability_version"}
		}
		return true
	}
	a.c, a.d.Capability, a.d.AbortTimeout = c, c, c.AbortTimeout
	return false
}

// authorise: the data classification is valid, and the caller may invoke
// the capability at its floor risk with data of that classification.
func (g *Gate) authorise(a *admission) bool {
	c, caller := a.c, a.caller
	class := g.cfg.DefaultDataClassification
	if a.s.Constraints != nil && a.s.Constraints.DataClassification != "" {
		class = Classification(a.s.Constraints.DataClassification)
	}
	if class.Rank() == 0 {
		a.rejectWith(ReasonInvalidInput, nil, "data_classification %q is not T1–T4", truncate(string(class)))
		a.d.Rejection.Paths = []string{"/constraints/data_classification"}
		return true
	}
	if least := Classification(c.MinDataClassification); least.Rank() > class.Rank() {
		class = least // a recipe's derived classification: never below it
	}
	a.class, a.d.DataClassification = class, class
	a.floor = g.floor(c)
	acl, ok := g.cfg.Callers[caller]
	a.acl = acl
	switch {
	case !ok:
		return a.rejectWith(ReasonForbidden, nil, "caller %s has no permissions on this agent", caller)
	case !slices.Contains(acl.Capabilities, c.Name) && !slices.Contains(acl.Capabilities, "*"):
		return a.rejectWith(ReasonForbidden, nil, "caller %s may not invoke %s", caller, c.Name)
	case a.floor.Rank() > acl.MaxRiskLevel.Rank():
		return a.rejectWith(ReasonForbidden, nil, "%s is at least %s, caller %s is authorised up to %s", c.Name, a.floor, caller, acl.MaxRiskLevel)
	case class.Rank() > acl.MaxDataClassification.Rank():
		return a.rejectWith(ReasonForbidden, nil, "data classified %s, caller %s is authorised up to %s", class, caller, acl.MaxDataClassification)
	}
	return false
}

// validateInputs: the inputs match the capability's input_schema.
func (g *Gate) validateInputs(a *admission) bool {
	c := a.c
	err := c.ValidateInput(a.s.Inputs)
	if err == nil {
		return false
	}
	a.rejectWith(ReasonInvalidInput, err, "inputs do not match the input_schema of %s %s: %v", c.Name, c.SemVer, err)
	var ie *capability.InputError
	if errors.As(err, &ie) {
		for _, p := range ie.Paths() {
			a.d.Rejection.Paths = append(a.d.Rejection.Paths, "/inputs"+p)
		}
	}
	return true
}

// checkSemantics: the checks JSON Schema cannot express (the configured
// ranges, the task's max_duration), every failing path reported at once.
func (g *Gate) checkSemantics(a *admission) bool {
	doc, err := decodeInputs(a.s.Inputs)
	if err != nil { // the schema accepted it, so it is JSON; an object is required by the declaration schema
		a.rejectWith(ReasonInvalidInput, err, "inputs: %v", err)
		a.d.Rejection.Paths = []string{"/inputs"}
		return true
	}
	a.doc = doc
	paths, msgs := semantic(g.cfg.Ranges, a.c.Name, doc)
	maxDur, durPath, durErr := g.maxDuration(a.c, a.s)
	if durErr != "" {
		paths, msgs = append(paths, durPath), append(msgs, durErr)
	}
	if len(paths) > 0 {
		a.rejectWith(ReasonInvalidInput, nil, "inputs: %s", strings.Join(msgs, "; "))
		slices.Sort(paths)
		a.d.Rejection.Paths = slices.Compact(paths)
		return true
	}
	a.d.MaxDuration = maxDur
	return false
}

// assessRisk: the risk level is the floor raised by the rules that fire
// (input-driven escalations, then the context rules); above what both the
// caller and the capability allow, the task is refused with a suggestion.
func (g *Gate) assessRisk(a *admission) bool {
	fired := escalate(g.cfg.Escalations, a.c.Name, a.doc, g.cfg.GasHazards)
	if a.c.Safety.InvolvesPhysicalResources {
		fired = append(fired, g.contextRules(a.c, a.req.BusyResources)...)
	}
	a.d.Fired = fired
	level := a.floor
	for _, f := range fired {
		level = maxLevel(level, f.Level)
	}
	a.level, a.d.RiskLevel = level, level
	allowed := minLevel(a.acl.MaxRiskLevel, a.c.Safety.RiskCeiling)
	if level.Rank() <= allowed.Rank() {
		return false
	}
	a.rejectWith(ReasonRiskTooHigh, nil, "%s", g.riskMessage(a))
	a.d.Rejection.AssessedRiskLevel = level
	a.d.Rejection.Suggestion = suggest(a.floor, fired, allowed)
	return true
}

// contextRules are the rules that fire from the context of a task on
// physical resources: outside attended hours, and while shared equipment
// it needs is busy.
func (g *Gate) contextRules(c *capability.Capability, busyResources []string) []Fired {
	var fired []Fired
	if u := g.cfg.Unattended; u != nil && !attended(g.wins, g.loc, g.clock()) {
		var ws []string
		for _, w := range g.wins {
			ws = append(ws, w.text)
		}
		remedy := ""
		if len(ws) > 0 {
			remedy = fmt.Sprintf("submit during attended hours (%s %s)", strings.Join(ws, "; "), g.loc)
		}
		fired = append(fired, Fired{Rule: "unattended", Level: u.Level, Remedy: remedy})
	}
	if se := g.cfg.SharedEquipment; se != nil {
		var busy []string
		for _, r := range c.Safety.ResourceTypes {
			if slices.Contains(busyResources, r) {
				busy = append(busy, r)
			}
		}
		if len(busy) > 0 {
			fired = append(fired, Fired{Rule: "shared_equipment_busy", Level: se.Level,
				Remedy: "wait until " + strings.Join(busy, ", ") + " is free"})
		}
	}
	return fired
}

// riskMessage says why the assessed level is refused: above the caller's
// authorisation, or above the capability's ceiling; and which rules fired.
func (g *Gate) riskMessage(a *admission) string {
	var msg string
	if a.level.Rank() > a.acl.MaxRiskLevel.Rank() {
		msg = fmt.Sprintf("Task parameters indicate %s risk level, but caller %s is only authorized for R1-%s", a.level, a.caller, a.acl.MaxRiskLevel)
	} else {
		msg = fmt.Sprintf("Task parameters indicate %s risk level, above the risk ceiling %s of %s", a.level, a.c.Safety.RiskCeiling, a.c.Name)
	}
	if len(a.d.Fired) > 0 {
		var names []string
		for _, f := range a.d.Fired {
			names = append(names, f.Rule+"→"+string(f.Level))
		}
		msg += " (" + strings.Join(names, ", ") + ")"
	}
	return msg
}

// protectData: access to data classified T2 and above is audited; T3 and
// above is admitted only with encryption in transit and at rest.
func (g *Gate) protectData(a *admission) bool {
	a.d.AuditedAccess = a.class.Rank() >= T2.Rank()
	if a.class.Rank() < T3.Rank() {
		return false
	}
	if !g.prot.UplinkTLS || !g.prot.AtRestKey {
		var missing []string
		if !g.prot.UplinkTLS {
			missing = append(missing, "the broker uplink is not TLS")
		}
		if !g.prot.AtRestKey {
			missing = append(missing, "no at-rest encryption key is configured")
		}
		return a.rejectWith(ReasonForbidden, ErrUnprotected, "data classified %s needs encryption in transit and at rest: %s", a.class, strings.Join(missing, " and "))
	}
	a.d.Encrypted = true
	return false
}

// checkConcurrency: no more sessions of the capability than it allows.
func (g *Gate) checkConcurrency(a *admission) bool {
	if lim := a.c.Constraints.ConcurrentLimit; lim > 0 && a.req.Running >= lim {
		return a.rejectWith(ReasonResourceUnavailable, nil, "%s allows %d concurrent session(s), %d running", a.c.Name, lim, a.req.Running)
	}
	return false
}

// approve ends an admission that passed every check: it waits for a human
// when the capability requires one at R3 and above, else it is accepted.
func (g *Gate) approve(a *admission) Decision {
	a.d.Permissions = g.permissions(a.c)
	if a.c.Safety.RequiresHumanApproval && a.level.Rank() >= capability.R3.Rank() {
		a.d.Outcome = PendingApproval
		return a.d
	}
	a.d.Outcome = Accepted
	return a.d
}

func (g *Gate) floor(c *capability.Capability) capability.RiskLevel { return Floor(g.cfg, c) }

// Floor is c's static risk floor under cfg: the configured
// capabilities.NAME.risk_floor, or the one derived from the declaration,
// and never below c.RiskFloor (a recipe's floor, derived from what it
// does).
// A caller whose max_risk_level is below it can never run c: the gate
// refuses every task of it (and discovery does not offer it).
func Floor(cfg Config, c *capability.Capability) capability.RiskLevel {
	f := derivedFloor(c)
	if p, ok := cfg.Capabilities[c.Name]; ok && p.RiskFloor != "" {
		f = p.RiskFloor
	}
	if c.RiskFloor.Rank() > f.Rank() { // a recipe's derived floor
		f = c.RiskFloor
	}
	return f
}

func (g *Gate) permissions(c *capability.Capability) []catalog.Permission {
	if p, ok := g.cfg.Capabilities[c.Name]; ok && len(p.Permissions) > 0 {
		return slices.Clone(p.Permissions)
	}
	return derivedPermissions(c)
}

// maxDuration is the task's max_duration bounded by the capability's (the
// configured default when neither names one).
func (g *Gate) maxDuration(c *capability.Capability, s *wire.TaskSubmit) (time.Duration, string, string) {
	limit := c.MaxDuration
	if limit == 0 {
		limit = g.cfg.DefaultMaxDuration
	}
	if s.Constraints == nil || s.Constraints.MaxDuration == "" {
		return limit, "", ""
	}
	d, err := capability.ParseDuration(s.Constraints.MaxDuration)
	switch {
	case err != nil:
		return 0, "/constraints/max_duration", fmt.Sprintf("/constraints/max_duration: %v", err)
	case d <= 0:
		return 0, "/constraints/max_duration", "/constraints/max_duration: must be positive"
	}
	return min(d, limit), "", ""
}
