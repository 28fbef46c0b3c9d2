package auditaccess

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/audit"
	"hcp-edge/session/gate"
	"hcp-edge/session/store"
)

// Where an audit command read the log.
const (
	ViaDaemon    = "daemon"     // the running daemon, over its control socket
	ViaStateFile = "state file" // the state file itself, the daemon being down
)

// offlineLockTimeout bounds the wait for the state file's lock when the
// daemon is thought to be down.
const offlineLockTimeout = 500 * time.Millisecond

// brokenLink is the first broken link of the chain.
type BrokenLink struct {
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
}

// auditVerifyResult is the reply to audit_verify and the output of
// audit verify --json.
type VerifyResult struct {
	Via       string      `json:"via"`
	StateFile string      `json:"state_file"`
	Intact    bool        `json:"intact"`
	Checked   uint64      `json:"entries_checked"`
	HeadSeq   uint64      `json:"head_seq"`
	HeadHash  string      `json:"head_hash"`
	Broken    *BrokenLink `json:"broken,omitempty"`
	// Anchor is the last archived entry (nil: nothing archived): the
	// chain in the file starts after it (archive.go).
	Anchor *audit.Anchor `json:"anchor,omitempty"`
	// Archives and ArchiveBroken are `audit verify --archive`'s: the
	// archive files checked, and the first bad entry in them.
	Archives      []audit.ArchiveSpan `json:"archives,omitempty"`
	ArchiveBroken *ArchiveBroken      `json:"archive_broken,omitempty"`
}

// ArchiveBroken is the first bad entry of the archive files.
type ArchiveBroken struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	Reason string `json:"reason"`
}

// replayEntry is one audit entry of a session, with what a reader looks
// for pulled out of its detail.
type Entry struct {
	Seq      uint64          `json:"seq"`
	At       time.Time       `json:"at"`
	Kind     string          `json:"kind"`
	Decision string          `json:"decision,omitempty"` // the gate's outcome, the transition, the interlock's decision
	Operator string          `json:"operator,omitempty"`
	UID      *uint32         `json:"uid,omitempty"`     // the OS user the kernel reported (control actions, signatures)
	Meaning  string          `json:"meaning,omitempty"` // a signature's meaning ("approved for execution", "released until ...")
	Summary  string          `json:"summary,omitempty"`
	Detail   json.RawMessage `json:"detail"` // the entry's detail (JSON text, or a JSON string)
	Hash     string          `json:"hash"`
}

// auditReplayResult is the reply to audit_replay and the output of
// audit replay --json.
type ReplayResult struct {
	Via       string      `json:"via"`
	StateFile string      `json:"state_file"`
	SessionID string      `json:"session_id"`
	State     string      `json:"state,omitempty"`
	DataClass string      `json:"data_classification,omitempty"`
	Entries   []Entry     `json:"entries"`
	Broken    *BrokenLink `json:"broken,omitempty"`
}

// verifyLog runs Verify on l. A broken chain is a result, not an error.
func Verify(ctx context.Context, l *audit.Log, via, path string) (VerifyResult, error) {
	r := VerifyResult{Via: via, StateFile: path}
	n, err := l.Verify(ctx)
	r.Checked = n
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		r.Broken = &BrokenLink{Seq: ce.Seq, Reason: ce.Reason}
	case err != nil:
		return r, err
	}
	seq, h, herr := l.Head()
	if herr != nil && r.Broken == nil {
		if !errors.As(herr, &ce) {
			return r, herr
		}
		r.Broken = &BrokenLink{Seq: ce.Seq, Reason: ce.Reason}
	}
	r.HeadSeq, r.HeadHash = seq, hex.EncodeToString(h[:])
	if a, err := l.Anchor(); err == nil && a.Seq > 0 {
		r.Anchor = &a
	}
	r.Intact = r.Broken == nil
	return r, nil
}

// accessor is who reads a session's data, and how.
type Accessor struct {
	Operator string
	Via      string
}

// dataAccess is the detail of a data_access audit entry.
type DataAccess struct {
	Operator  string `json:"operator"`
	Access    string `json:"access"` // artifact_get, audit_replay
	Object    string `json:"object"` // what was read
	Via       string `json:"via"`
	DataClass string `json:"data_classification"`
}

// recordAccess appends a data_access entry when session sid's data is
// classified T2 or above (the gate's AuditedAccess). A session the store
// does not hold has no classified data. The caller must refuse the access
// when this fails.
func Record(ctx context.Context, st *store.Store, sid, access, object string, who Accessor) error {
	sess, err := st.Session(ctx, sid)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrBadID) {
		return nil
	}
	if err != nil {
		return err
	}
	if gate.Classification(sess.DataClass).Rank() < gate.T2.Rank() {
		return nil
	}
	if who.Operator == "" {
		who.Operator = "unknown"
	}
	b, err := json.Marshal(DataAccess{Operator: who.Operator, Access: access, Object: object, Via: who.Via, DataClass: sess.DataClass})
	if err != nil {
		return err
	}
	_, err = st.Audit().Append(ctx, audit.Entry{SessionID: sid, Kind: audit.KindDataAccess, Detail: string(b)})
	return err
}

// replayLog records the access (T2 and above) and returns session sid's
// entries.
func Replay(ctx context.Context, st *store.Store, sid string, who Accessor, via, path string) (ReplayResult, error) {
	r := ReplayResult{Via: via, StateFile: path, SessionID: sid, Entries: []Entry{}}
	if err := Record(ctx, st, sid, "audit_replay", "audit entries of "+sid, who); err != nil {
		return r, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	if sess, err := st.Session(ctx, sid); err == nil {
		r.State, r.DataClass = string(sess.State), sess.DataClass
	}
	es, err := st.Audit().Replay(ctx, sid)
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		r.Broken = &BrokenLink{Seq: ce.Seq, Reason: ce.Reason}
	case err != nil:
		return r, err
	}
	for _, e := range es {
		r.Entries = append(r.Entries, Describe(e))
	}
	return r, nil
}

// byOperator finds "by operator NAME" in a transition's reason.
var byOperator = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`by operator ([^\s:;,]+)`) })

// describe pulls the decision, the operator and a summary out of e's
// detail.
func Describe(e audit.Entry) Entry {
	r := Entry{Seq: e.Seq, At: e.At, Kind: string(e.Kind), Hash: hex.EncodeToString(e.Hash[:])}
	var d map[string]any
	if json.Unmarshal([]byte(e.Detail), &d) == nil {
		r.Detail = json.RawMessage(e.Detail)
	} else {
		r.Detail, _ = json.Marshal(e.Detail)
		r.Summary = e.Detail
		return r
	}
	str := func(k string) string { s, _ := d[k].(string); return s }
	join := func(parts ...string) string {
		var out []string
		for _, p := range parts {
			if p != "" {
				out = append(out, p)
			}
		}
		return strings.Join(out, " ")
	}
	r.Operator = str("operator")
	if u, ok := d["uid"].(float64); ok {
		uid := uint32(u)
		r.UID = &uid
	}
	r.Meaning = str("meaning")
	switch e.Kind {
	case audit.KindGate:
		r.Decision = join(str("outcome"), str("risk_level"))
		r.Summary = join(str("capability")+"@"+str("version"), "caller="+str("caller_id"), str("reason_code"), str("message"))
		if c := str("data_classification"); c != "" {
			r.Summary = join(r.Summary, "data="+c)
		}
	case audit.KindTransition:
		from := str("from")
		if from == "" {
			from = "∅"
		}
		r.Decision = from + " → " + str("to")
		r.Summary = join(str("trigger"), str("reason"))
		if m := byOperator().FindStringSubmatch(str("reason")); m != nil && r.Operator == "" {
			r.Operator = m[1]
		}
	case audit.KindToolCall, audit.KindInterlock:
		r.Decision = str("decision")
		var act string
		if a, ok := d["action"].(map[string]any); ok {
			b, _ := json.Marshal(a)
			act = string(b)
		}
		r.Summary = join(act, str("rule"), str("trip"), str("reason"))
	case audit.KindDataAccess:
		r.Decision = str("access")
		r.Summary = join(str("object"), "via "+str("via"), str("data_classification"))
		if why := str("refused"); why != "" {
			r.Decision += " refused"
			r.Summary = join(r.Summary, why)
		}
	case audit.KindControl:
		r.Decision = join(str("op"), str("outcome"))
		who := fmt.Sprintf("uid=%v user=%s", d["uid"], str("user"))
		if d["uid"] == nil && str("user") == "" { // the agent's own act (the furnace's init at start), no operator's
			who = "the agent"
		}
		r.Summary = join(who, str("target"), str("error"))
	case audit.KindApproval:
		r.Decision = str("decision")
		r.Summary = join(str("approval_id"), str("access_id"), str("meaning"), str("valid_until"), str("reason"))
		if n, ok := d["signature"].(float64); ok {
			r.Summary = join(fmt.Sprintf("uid=%v user=%s signature %v of %v", d["uid"], str("user"), n, d["required"]), r.Summary)
		}
	case audit.KindRecipe:
		r.Decision = "recipe " + str("name") + "@" + str("version")
		r.Summary = join(str("name")+"@"+str("version"), "sha256="+str("sha256"))
	case audit.KindModel:
		r.Decision = join(str("kind"), str("model"))
		r.Summary = str("detail")
		if inv, ok := d["invocation"].(map[string]any); ok {
			r.Summary = join(r.Summary, fmt.Sprintf("latency=%vns tokens=%v/%v cost=%v confidence=%v", inv["latency_ns"], inv["tokens_in"], inv["tokens_out"], inv["cost"], inv["confidence"]))
			if e, ok := inv["error"].(string); ok {
				r.Summary = join(r.Summary, e)
			}
		}
	case audit.KindRetention:
		r.Decision = join(str("decision"), str("reason"))
		r.Summary = join("closed "+str("closed_at"), "kept "+str("retention"), str("data_classification"),
			fmt.Sprintf("events=%v checkpoints=%v artifacts=%v", d["events"], d["checkpoints"], d["artifacts"]))
	case audit.KindAnalysis:
		r.Decision = str("code")
		r.Summary = join("expected "+str("expected"), "found "+str("found"), str("message"))
	case audit.KindAlert:
		r.Decision = join("alert "+str("outcome"), str("receiver"))
		r.Summary = join(str("class"), str("severity"), str("title"), str("alert_id"), str("error"))
	case audit.KindDiscovery:
		r.Decision = "refused " + str("refused")
		r.Summary = join("caller "+str("caller"), str("capability"), str("reason"))
	default:
		r.Summary = e.Detail
	}
	return r
}

// openOffline opens the state file in dir without the daemon, read-only
// unless write (to record a data access).
func OpenOffline(dir string, write bool) (*store.Store, string, error) {
	path := filepath.Join(dir, rigconfig.StateFile)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		return nil, path, fmt.Errorf("no state file: %w", err)
	}
	opts := store.DefaultOpts()
	opts.Timeout, opts.ReadOnly = offlineLockTimeout, !write
	st, err := store.Open(path, opts)
	if errors.Is(err, bolterrors.ErrTimeout) {
		err = fmt.Errorf("%s is locked by a running daemon (ask it: leave out --state-dir, or give --socket PATH): %w", path, err)
	}
	return st, path, err
}

// replayOffline replays from the state file in dir, the daemon being down.
// A T2+ session's replay is recorded, which needs the file writable.
func ReplayOffline(ctx context.Context, dir, sid, operator string) (ReplayResult, error) {
	st, path, err := OpenOffline(dir, false)
	if err != nil {
		return ReplayResult{}, err
	}
	sess, serr := st.Session(ctx, sid)
	if serr == nil && gate.Classification(sess.DataClass).Rank() >= gate.T2.Rank() {
		_ = st.Close()
		if st, _, err = OpenOffline(dir, true); err != nil {
			return ReplayResult{}, fmt.Errorf("session %s is %s: reading it is recorded in the audit log, and %s cannot be opened to record it: %w",
				sid, sess.DataClass, path, err)
		}
	}
	defer st.Close()
	return Replay(ctx, st, sid, Accessor{Operator: operator, Via: "state file"}, ViaStateFile, path)
}
