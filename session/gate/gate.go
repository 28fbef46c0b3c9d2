package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hcp-edge/hcp-edge/device/catalog"
	"github.com/hcp-edge/hcp-edge/session/audit"
	"github.com/hcp-edge/hcp-edge/session/capability"
	"github.com/hcp-edge/hcp-edge/transport/wire"
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
		opts.Clock = time.Now
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

func (g *Gate) decide(req Request) Decision {
	d := Decision{SessionID: req.SessionID, MessageID: req.MessageID}
	s := req.Submit

	// 1. Caller authenticated.
	if s == nil {
		return reject(d, ReasonInvalidInput, nil, "no task_submit payload")
	}
	caller, ok := g.cfg.BrokerUsers[req.BrokerUser]
	switch {
	case req.BrokerUser == "":
		return reject(d, ReasonUnauthorized, nil, "the message carries no broker-validated user")
	case !ok:
		return reject(d, ReasonUnauthorized, nil, "broker user %q is not mapped to any caller", truncate(req.BrokerUser))
	case caller != s.CallerID:
		return reject(d, ReasonUnauthorized, nil, "broker user %q may not act as caller %q", truncate(req.BrokerUser), truncate(s.CallerID))
	}
	d.CallerID = caller

	// 2. Capability known and version range satisfied.
	c, err := g.reg.Resolve(s.Capability, s.CapabilityVersion)
	if err != nil {
		d = reject(d, ReasonInvalidInput, errors.Join(ErrUnknownCapability, err), "%v", err)
		d.Rejection.Paths = []string{"/capability"}
		if !errors.Is(err, capability.ErrUnknownCapability) {
			d.Rejection.Paths = []string{"/capability_version"}
		}
		return d
	}
	d.Capability = c
	d.AbortTimeout = c.AbortTimeout

	// 3. Caller permitted: capability, floor risk, data classification.
	class := g.cfg.DefaultDataClassification
	if s.Constraints != nil && s.Constraints.DataClassification != "" {
		class = Classification(s.Constraints.DataClassification)
	}
	if class.Rank() == 0 {
		d = reject(d, ReasonInvalidInput, nil, "data_classification %q is not T1–T4", truncate(string(class)))
		d.Rejection.Paths = []string{"/constraints/data_classification"}
		return d
	}
	d.DataClassification = class
	floor := g.floor(c)
	acl, ok := g.cfg.Callers[caller]
	switch {
	case !ok:
		return reject(d, ReasonForbidden, nil, "caller %s has no permissions on this agent", caller)
	case !slices.Contains(acl.Capabilities, c.Name) && !slices.Contains(acl.Capabilities, "*"):
		return reject(d, ReasonForbidden, nil, "caller %s may not invoke %s", caller, c.Name)
	case floor.Rank() > acl.MaxRiskLevel.Rank():
		return reject(d, ReasonForbidden, nil, "%s is at least %s, caller %s is authorised up to %s", c.Name, floor, caller, acl.MaxRiskLevel)
	case class.Rank() > acl.MaxDataClassification.Rank():
		return reject(d, ReasonForbidden, nil, "data classified %s, caller %s is authorised up to %s", class, caller, acl.MaxDataClassification)
	}

	// 4. Inputs valid against the declared schema.
	if err := c.ValidateInput(s.Inputs); err != nil {
		d = reject(d, ReasonInvalidInput, err, "inputs do not match the input_schema of %s %s: %v", c.Name, c.SemVer, err)
		var ie *capability.InputError
		if errors.As(err, &ie) {
			for _, p := range ie.Paths() {
				d.Rejection.Paths = append(d.Rejection.Paths, "/inputs"+p)
			}
		}
		return d
	}

	// 5. Semantic checks JSON Schema cannot express.
	doc, err := decodeInputs(s.Inputs)
	if err != nil { // the schema accepted it, so it is JSON; an object is required by the declaration schema
		d = reject(d, ReasonInvalidInput, err, "inputs: %v", err)
		d.Rejection.Paths = []string{"/inputs"}
		return d
	}
	paths, msgs := semantic(g.cfg.Ranges, c.Name, doc)
	maxDur, durPath, durErr := g.maxDuration(c, s)
	if durErr != "" {
		paths, msgs = append(paths, durPath), append(msgs, durErr)
	}
	if len(paths) > 0 {
		d = reject(d, ReasonInvalidInput, nil, "inputs: %s", strings.Join(msgs, "; "))
		slices.Sort(paths)
		d.Rejection.Paths = slices.Compact(paths)
		return d
	}
	d.MaxDuration = maxDur

	// 6. Risk: static floor, input-driven escalation, context.
	fired := escalate(g.cfg.Escalations, c.Name, doc)
	if c.Safety.InvolvesPhysicalResources {
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
				if slices.Contains(req.BusyResources, r) {
					busy = append(busy, r)
				}
			}
			if len(busy) > 0 {
				fired = append(fired, Fired{Rule: "shared_equipment_busy", Level: se.Level,
					Remedy: "wait until " + strings.Join(busy, ", ") + " is free"})
			}
		}
	}
	d.Fired = fired
	level := floor
	for _, f := range fired {
		level = maxLevel(level, f.Level)
	}
	d.RiskLevel = level
	allowed := minLevel(acl.MaxRiskLevel, c.Safety.RiskCeiling)
	if level.Rank() > allowed.Rank() {
		var msg string
		if level.Rank() > acl.MaxRiskLevel.Rank() {
			msg = fmt.Sprintf("Task parameters indicate %s risk level, but caller %s is only authorized for R1-%s", level, caller, acl.MaxRiskLevel)
		} else {
			msg = fmt.Sprintf("Task parameters indicate %s risk level, above the risk ceiling %s of %s", level, c.Safety.RiskCeiling, c.Name)
		}
		if len(fired) > 0 {
			var names []string
			for _, f := range fired {
				names = append(names, f.Rule+"→"+string(f.Level))
			}
			msg += " (" + strings.Join(names, ", ") + ")"
		}
		d = reject(d, ReasonRiskTooHigh, nil, "%s", msg)
		d.Rejection.AssessedRiskLevel = level
		d.Rejection.Suggestion = suggest(floor, fired, allowed)
		return d
	}

	// 7. Data classification handling.
	d.AuditedAccess = class.Rank() >= T2.Rank()
	if class.Rank() >= T3.Rank() {
		if !g.prot.UplinkTLS || !g.prot.AtRestKey {
			var missing []string
			if !g.prot.UplinkTLS {
				missing = append(missing, "the broker uplink is not TLS")
			}
			if !g.prot.AtRestKey {
				missing = append(missing, "no at-rest encryption key is configured")
			}
			return reject(d, ReasonForbidden, ErrUnprotected, "data classified %s needs encryption in transit and at rest: %s", class, strings.Join(missing, " and "))
		}
		d.Encrypted = true
	}

	// 8. Concurrency.
	if lim := c.Constraints.ConcurrentLimit; lim > 0 && req.Running >= lim {
		return reject(d, ReasonResourceUnavailable, nil, "%s allows %d concurrent session(s), %d running", c.Name, lim, req.Running)
	}

	// 9. Human approval.
	d.Permissions = g.permissions(c)
	if c.Safety.RequiresHumanApproval && level.Rank() >= capability.R3.Rank() {
		d.Outcome = PendingApproval
		return d
	}
	d.Outcome = Accepted
	return d
}

func (g *Gate) floor(c *capability.Capability) capability.RiskLevel {
	if p, ok := g.cfg.Capabilities[c.Name]; ok && p.RiskFloor != "" {
		return p.RiskFloor
	}
	return derivedFloor(c)
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
