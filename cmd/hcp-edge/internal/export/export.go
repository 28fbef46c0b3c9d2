package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/atrest"
	"hcp-edge/session/eln"
	"hcp-edge/session/engine"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// Sentinel errors.
var (
	// ErrNotEnded is a session that has not ended: its record is not final.
	ErrNotEnded = errors.New("export: the session has not ended")
	// ErrArtifact is an artifact file missing or not matching the size and
	// sha256 its final message lists.
	ErrArtifact = errors.New("export: artifact missing or damaged")
	// ErrExists is an --out that exists.
	ErrExists = errors.New("export: the output file exists")
)

// Source is where Build reads.
type Source struct {
	Store       *store.Store
	StateDir    string
	Key         *atrest.Key // opens a T3/T4 session's sealed files (nil: none)
	Instruments []eln.Instrument
	Rig         string
	Version     string // the agent's
	Now         func() time.Time
}

// Build returns session sid's .eln archive.
func Build(ctx context.Context, src Source, sid string) ([]byte, error) {
	sess, err := src.Store.Session(ctx, sid)
	if err != nil {
		return nil, fmt.Errorf("export: session %s: %w", sid, err)
	}
	if !sess.State.Terminal() {
		return nil, fmt.Errorf("session %s is %s: %w (export refuses it rather than write a partial record; wait for it to end, or abort it)", sid, sess.State, ErrNotEnded)
	}
	rec, err := engine.RecordOf(sess)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if src.Now != nil {
		now = src.Now
	}
	run := eln.Run{SessionID: sid, Capability: sess.Capability, Version: sess.CapabilityVersion, State: string(sess.State),
		DataClass: sess.DataClass, Caller: sess.CallerID, Start: sess.CreatedAt, End: sess.UpdatedAt, Exported: now(),
		Agent: "hcp-edge", AgentVer: src.Version, Rig: src.Rig, Instruments: src.Instruments}
	if !rec.RunningSince.IsZero() {
		run.Start = rec.RunningSince
	}
	var submit struct {
		Intent  string          `json:"intent"`
		Inputs  map[string]any  `json:"inputs"`
		Context eln.TaskContext `json:"context"`
	}
	_ = json.Unmarshal(rec.Submit, &submit)
	run.Inputs, run.Intent, run.Context = submit.Inputs, submit.Intent, submit.Context
	run.Title = fmt.Sprintf("%s, session %s (%s)", sess.Capability, sid, sess.State)
	run.Description = strings.TrimSpace(submit.Intent + fmt.Sprintf(" — a %s run of %s@%s on the rig by hcp-edge, for caller %s, data classification %s.",
		strings.ToLower(string(sess.State)), sess.Capability, sess.CapabilityVersion, sess.CallerID, orT1(sess.DataClass)))
	if len(rec.Submit) > 0 {
		run.Files = append(run.Files, eln.File{Path: "task_submit.json", Name: "task_submit", Type: "application/json",
			Description: "the task_submit payload the session was accepted with (intent, inputs, constraints)", Data: indent(rec.Submit), Role: "input"})
	}
	if id := rec.Recipe; id != nil {
		run.Recipe = &eln.Recipe{Name: id.Name, Version: id.Version, SHA256: id.SHA256}
		if len(rec.RecipeSource) > 0 {
			sum := sha256.Sum256(rec.RecipeSource)
			if hex.EncodeToString(sum[:]) != id.SHA256 {
				return nil, fmt.Errorf("export: session %s: its pinned recipe file does not match the recipe's sha256 %s: %w", sid, id.SHA256, ErrArtifact)
			}
			run.Recipe.File = "recipe/" + id.Name + "-" + id.Version + ".yaml"
			run.Files = append(run.Files, eln.File{Path: run.Recipe.File, Name: id.Name, Type: "application/yaml",
				Description: "the process recipe the session ran, as pinned at its acceptance", Data: rec.RecipeSource, Role: "input"})
		}
	}
	for _, a := range rec.Approvals {
		uid := a.UID
		p := eln.Person{Name: a.Display, OSUser: a.User, Role: a.Meaning + " at " + a.At.UTC().Format(time.RFC3339)}
		if a.Known {
			p.UID = &uid
		}
		run.Operators = append(run.Operators, p)
	}
	final, finalBytes, err := finalMessage(src, sid, sess)
	if err != nil {
		return nil, err
	}
	if final != nil {
		run.Files = append(run.Files, eln.File{Path: "final_message.json", Name: string(final.Type), Type: "application/json",
			Description: "the session's final HCP message as its caller received it: outputs (with the analysis provenance: which model decided), artifacts, execution summary",
			Data:        finalBytes, Role: "result"})
		arts, err := artifactsOf(final)
		if err != nil {
			return nil, err
		}
		for _, a := range arts {
			f, err := artifactFile(src, sid, sess, a)
			if err != nil {
				return nil, err
			}
			run.Files = append(run.Files, f)
		}
	}
	auditFile, err := auditEntries(ctx, src.Store, sid)
	if err != nil {
		return nil, err
	}
	run.Files = append(run.Files, auditFile)
	var b bytes.Buffer
	if err := eln.Write(&b, run); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func orT1(c string) string {
	if c == "" {
		return "T1"
	}
	return c
}

func indent(raw []byte) []byte {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return raw
	}
	return append(b.Bytes(), '\n')
}

// finalMessage reads results/{sid}.json (sealed for T3/T4). A session that
// completed or failed has one; a rejected or aborted one may not.
func finalMessage(src Source, sid string, sess store.Session) (*wire.Envelope, []byte, error) {
	path := filepath.Join(src.StateDir, rigconfig.ResultsDir, sid+".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && sess.State != lifecycle.Completed && sess.State != lifecycle.Failed {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("export: session %s: its final message %s: %w", sid, path, err)
	}
	if atrest.IsSealed(b) {
		if src.Key == nil {
			return nil, nil, fmt.Errorf("export: session %s is %s and %s is sealed at rest: no at-rest key: %w", sid, sess.DataClass, path, atrest.ErrNoKey)
		}
		if b, err = src.Key.Open(b, atrest.ResultBinding(sid)); err != nil {
			return nil, nil, fmt.Errorf("export: %s: %w", path, err)
		}
	}
	env, err := wire.Decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("export: %s: %w", path, err)
	}
	return env, indent(b), nil
}

func artifactsOf(m *wire.Envelope) ([]wire.Artifact, error) {
	switch m.Type {
	case wire.TypeTaskCompleted:
		tc, err := m.TaskCompleted()
		if err != nil {
			return nil, err
		}
		return tc.Artifacts, nil
	case wire.TypeTaskFailed:
		tf, err := m.TaskFailed()
		if err != nil {
			return nil, err
		}
		return tf.Artifacts, nil
	}
	return nil, nil
}

// artifactFile reads one artifact (opened with the key when sealed) and
// checks it against its listing.
func artifactFile(src Source, sid string, sess store.Session, a wire.Artifact) (eln.File, error) {
	prefix := "hcp://" + sid + "/artifacts/"
	name, ok := strings.CutPrefix(a.URI, prefix)
	if !ok || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return eln.File{}, fmt.Errorf("export: session %s: artifact URI %q: %w", sid, a.URI, ErrArtifact)
	}
	path := filepath.Join(src.StateDir, rigconfig.ArtifactsDir, sid, name)
	data, err := os.ReadFile(path)
	if err != nil {
		return eln.File{}, fmt.Errorf("export: session %s: artifact %s (%s): %w: %w", sid, a.Name, path, ErrArtifact, err)
	}
	if atrest.IsSealed(data) {
		if src.Key == nil {
			return eln.File{}, fmt.Errorf("export: session %s is %s and artifact %s is sealed at rest: no at-rest key: %w", sid, sess.DataClass, a.Name, atrest.ErrNoKey)
		}
		if data, err = src.Key.Open(data, atrest.ArtifactBinding(sid, name)); err != nil {
			return eln.File{}, fmt.Errorf("export: session %s: artifact %s (%s): %w: %w", sid, a.Name, path, ErrArtifact, err)
		}
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != a.SizeBytes || !strings.EqualFold("sha256:"+hex.EncodeToString(sum[:]), a.Checksum) {
		return eln.File{}, fmt.Errorf("export: session %s: artifact %s (%s) is %d bytes sha256:%x, its final message lists %d bytes %s: %w",
			sid, a.Name, path, len(data), sum, a.SizeBytes, a.Checksum, ErrArtifact)
	}
	return eln.File{Path: "artifacts/" + name, Name: a.Name, Type: a.Type, Data: data, Role: "result",
		Description: describeArtifact(a.Name)}, nil
}

func describeArtifact(name string) string {
	switch {
	case name == "raman_spectrum_jcamp":
		return "the Raman spectrum as JCAMP-DX 5.01 (XUNITS 1/CM, YUNITS COUNTS, acquisition parameters)"
	case name == "raw_spectrum":
		return "the Raman spectrum as measured (JSON: raman_shift_cm1, intensity_counts, integration_ms, acquired_at)"
	case strings.Contains(name, "growth_log"):
		return "the process log: every reading and setpoint with its time (CSV; units in the column names)"
	case strings.HasSuffix(name, "_plot"):
		return "a plot (SVG)"
	}
	return ""
}

// auditLine is one audit entry as the archive holds it: whole, with the
// hash and link that let anyone check it (session/audit's Sum).
type auditLine struct {
	Seq       uint64          `json:"seq"`
	At        time.Time       `json:"at"`
	SessionID string          `json:"session_id"`
	Kind      string          `json:"kind"`
	Detail    string          `json:"detail"`
	Prev      string          `json:"prev"`
	Hash      string          `json:"hash"`
	Summary   json.RawMessage `json:"summary,omitempty"`
}

func auditEntries(ctx context.Context, st *store.Store, sid string) (eln.File, error) {
	es, err := st.Audit().Replay(ctx, sid)
	if err != nil {
		return eln.File{}, fmt.Errorf("export: session %s: audit: %w", sid, err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range es {
		d := auditaccess.Describe(e)
		sum, _ := json.Marshal(struct {
			Decision string `json:"decision,omitempty"`
			Operator string `json:"operator,omitempty"`
			Text     string `json:"text,omitempty"`
		}{d.Decision, d.Operator, d.Summary})
		if err := enc.Encode(auditLine{Seq: e.Seq, At: e.At, SessionID: e.SessionID, Kind: string(e.Kind), Detail: e.Detail,
			Prev: hex.EncodeToString(e.Prev[:]), Hash: hex.EncodeToString(e.Hash[:]), Summary: sum}); err != nil {
			return eln.File{}, err
		}
	}
	return eln.File{Path: "audit/audit.jsonl", Name: "audit_entries", Type: "application/jsonl",
		Description: fmt.Sprintf("the session's %d audit entries (JSON Lines), each whole with its chain position, the previous entry's hash and its own: "+
			"hash = SHA-256(\"hcp-edge/audit/v1\\n\" | seq u64 | at unix-ns i64 | len u32 | session | len u32 | kind | len u32 | detail | prev), big-endian; "+
			"hcp-edge audit verify checks the whole chain", len(es)), Data: b.Bytes()}, nil
}

// WriteFile writes data to out: a temporary file in out's directory,
// synced, then hard-linked to out (refused with ErrExists when out
// exists, never replaced), the temporary removed. A failure leaves
// nothing at out.
func WriteFile(out string, data []byte) error {
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s: %w (remove it or choose another --out)", out, ErrExists)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".export-*.eln")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o640)
	}
	if err != nil {
		return fmt.Errorf("export: %s: %w", out, err)
	}
	if err := os.Link(tmp.Name(), out); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s: %w (remove it or choose another --out)", out, ErrExists)
		}
		return fmt.Errorf("export: %s: %w", out, err)
	}
	return nil
}

// InstrumentsOf lists the rig's instruments from its configuration: the
// Modbus instruments with the manufacturer and model of their profile
// (serial numbers are not in the configuration: left out): every heated
// zone's controller (a rig of one: furnace), every I/O module, every gauge
// controller with its heads.
func InstrumentsOf(r rigconfig.Rig) []eln.Instrument {
	var out []eln.Instrument
	profiles, _ := r.Profiles() // Parse loaded them; a problem there refused the configuration
	modbus := func(id, kind string, d rigconfig.ModbusDevice) eln.Instrument {
		b := r.ModbusBuses[d.Bus]
		in := eln.Instrument{ID: id, Kind: kind, Description: fmt.Sprintf("Modbus %s %s unit %d (bus %s)", b.Transport, b.Address, d.Unit, d.Bus)}
		if p := profiles[d.Profile]; p != nil {
			in.Model = strings.TrimSpace(p.Manufacturer + " " + p.Model)
			in.Description += ", instrument profile " + p.ID
		}
		return in
	}
	for _, z := range r.ZoneEntries() {
		kind := "furnace temperature controller"
		if len(r.Zones) > 0 {
			kind = "temperature controller of the heated zone " + z.Name
		}
		out = append(out, modbus(z.Controller, kind, z.ModbusDevice))
	}
	for _, m := range r.ModuleEntries() {
		out = append(out, modbus(m.Name, "digital I/O module (valves, pump, relay, interlock inputs)", m.ModbusDevice))
	}
	for _, m := range r.MFCs {
		out = append(out, eln.Instrument{ID: m.Name, Kind: "mass-flow controller, " + m.Gas + ", full scale " + m.FullScale,
			Description: "serial " + m.Port + " " + m.Mode + ", unit " + m.UnitID})
	}
	for _, g := range r.GaugeEntries() {
		kind := "vacuum gauge"
		if len(r.Gauges) > 0 {
			sep := " controller, heads: "
			for _, h := range g.Heads {
				kind, sep = kind+sep+h.Name+" ("+h.Role+")", ", "
			}
		}
		out = append(out, eln.Instrument{ID: g.Name, Kind: kind, Description: "serial " + g.Serial.Port + " " + g.Serial.Mode})
	}
	if r.Raman.Port != "" {
		out = append(out, eln.Instrument{ID: nameOr(r.Raman.Name, "raman"), Kind: "Raman spectrometer", Description: "serial " + r.Raman.Port + " " + r.Raman.Mode})
	}
	return slices.Clip(out)
}

func nameOr(n, d string) string {
	if n == "" {
		return d
	}
	return n
}

// URI is the HCP artifact URI of session sid's .eln archive (an extension
// of the artifact_request: docs/PROTOCOL-NOTES.md), also the object of
// the export's data_access audit entry.
func URI(sid string) string { return "hcp://" + sid + "/export/" + FileName(sid) }

// FileName is the archive's default file name.
func FileName(sid string) string { return "hcp-edge-session-" + sid + ".eln" }

// CheckOut refuses an out that exists (ErrExists) or whose directory does
// not take a new file, before anything is read or recorded.
func CheckOut(out string) error {
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s: %w (remove it or choose another --out)", out, ErrExists)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".export-*.eln")
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", out, err)
	}
	_ = tmp.Close()
	return os.Remove(tmp.Name())
}

// ArtifactName is the reserved artifact name under which a caller fetches
// a session's .eln archive over HCP: hcp://{session}/artifacts/record.eln
// (docs/PROTOCOL-NOTES.md).
const ArtifactName = "record.eln"
