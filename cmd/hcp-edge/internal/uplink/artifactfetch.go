package uplink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/atrest"
	"hcp-edge/session/audit"
	"hcp-edge/session/engine"
	"hcp-edge/session/store"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/wire"
)

// maxRemoteArtifact is the largest artifact the agent serves over the
// broker (64 MiB): artifact_request is answered chunk by chunk through the
// outbox, and a sealed artifact is opened whole for each chunk.
const maxRemoteArtifact = 64 << 20

// fetchVia is the data_access entries' via for a fetch over the broker.
const fetchVia = "broker"

// fetchArtifact answers an artifact_request with one artifact_chunk of an
// artifact of one of the asking caller's own sessions (its owner: the
// session's caller id is the broker-validated login's caller), or with
// request_refused naming why not. A T4 session's artifacts need an
// approved, unexpired access approval (engine.ReadAccess, audited at the
// first chunk); a T2/T3 session's first chunk is audited as a data access;
// a sealed (T3/T4) artifact is opened with the agent's at-rest key and
// served as plaintext, as `hcp-edge artifact get` copies it. Refusals of a
// known session are audited too.
func (u *Uplink) fetchArtifact(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	if cmd.MappedCallerID == "" {
		u.log.Warn("artifact_request of a broker user mapped to no caller: not answered", "user", cmd.UserID,
			"message_id", cmd.Envelope.MessageID)
		return tamqp.Outcome{Unrecorded: true}, nil
	}
	if u.ext == nil {
		return refused(cmd, wire.ReasonUnavailable, "this agent does not serve artifacts over the broker")
	}
	caller := cmd.MappedCallerID
	req, err := cmd.Envelope.ArtifactRequest()
	if err != nil {
		return refused(cmd, wire.ReasonInvalidInput, "%v", err)
	}
	sid, name, err := reply.ParseArtifactURI(req.URI)
	if err != nil {
		return refused(cmd, wire.ReasonInvalidInput, "%v", err)
	}
	if !strings.EqualFold(cmd.Envelope.SessionID.String(), sid) {
		return refused(cmd, wire.ReasonInvalidInput, "session_id %s is not the session of %s", cmd.Envelope.SessionID, req.URI)
	}
	sid = strings.ToLower(sid)
	sess, err := u.st.Session(ctx, sid)
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrBadID):
		u.log.Warn("artifact_request of an unknown session refused", "user", cmd.UserID, "caller", caller, "uri", req.URI)
		return refused(cmd, wire.ReasonNotFound, "no session %s on this agent", sid)
	case err != nil:
		return tamqp.Outcome{}, err
	}
	refuse := func(code, format string, args ...any) (tamqp.Outcome, error) {
		msg := fmt.Sprintf(format, args...)
		u.log.Warn("artifact_request refused", "user", cmd.UserID, "caller", caller, "uri", req.URI, "code", code, "reason", msg)
		out, err := refused(cmd, code, "%s", msg)
		if err != nil {
			return out, err
		}
		out.Record = func(tx *bolt.Tx) ([]tamqp.Reply, error) {
			return nil, auditFetchTx(tx, sid, fetchAudit{Caller: caller, User: cmd.UserID, Access: "artifact_fetch", Object: req.URI,
				Via: fetchVia, DataClass: sess.DataClass, Refused: code, Reason: msg})
		}
		return out, nil
	}
	if sess.CallerID != caller {
		return refuse(wire.ReasonForbidden, "session %s is not caller %s's: only the session's owner may fetch its artifacts", sid, caller)
	}
	reader := "caller " + caller
	if engine.NeedsAccessApproval(sess.DataClass) {
		if req.Offset == 0 {
			err = u.eng.ReadAccess(ctx, sid, reader, "artifact_fetch", req.URI, fetchVia)
		} else {
			err = u.eng.CheckRead(ctx, sid, reader, req.URI)
		}
		switch {
		case errors.Is(err, engine.ErrAccessDenied):
			return refuse(wire.ReasonAccessDenied, "%v", err)
		case errors.Is(err, engine.ErrAccessRequired) || errors.Is(err, engine.ErrAccessExpired):
			return refuse(wire.ReasonAccessRequired, "%v", err)
		case err != nil:
			return tamqp.Outcome{}, err
		}
	}
	a, err := u.ext.artifact(req.URI)
	if err != nil {
		return refuse(wire.ReasonNotFound, "%v", err)
	}
	switch {
	case a.SizeBytes > maxRemoteArtifact:
		return refuse(wire.ReasonTooLarge, "%s is %d bytes; artifacts over %d bytes are not served over the broker (hcp-edge artifact get on the agent's host)",
			req.URI, a.SizeBytes, maxRemoteArtifact)
	case req.Offset > a.SizeBytes:
		return refuse(wire.ReasonInvalidInput, "offset %d is past the end of %s (%d bytes)", req.Offset, req.URI, a.SizeBytes)
	}
	n := req.ChunkSize
	if n == 0 {
		n = wire.DefaultArtifactChunk
	}
	n = int(min(int64(n), a.SizeBytes-req.Offset))
	data, err := u.readChunk(a, name, req.Offset, n)
	if err != nil {
		return refuse(wire.ReasonUnavailable, "%v", err)
	}
	if req.Offset == 0 && !engine.NeedsAccessApproval(sess.DataClass) { // T4: ReadAccess audited it
		if err := auditaccess.Record(ctx, u.st, sid, "artifact_fetch", req.URI, auditaccess.Accessor{Operator: reader, Via: fetchVia}); err != nil {
			return refuse(wire.ReasonUnavailable, "the access could not be recorded in the audit log, so it is refused: %v", err)
		}
	}
	chunk := &wire.ArtifactChunk{URI: req.URI, Offset: req.Offset, Data: data, SizeBytes: a.SizeBytes, Checksum: a.Checksum,
		Final: req.Offset+int64(len(data)) == a.SizeBytes}
	env, err := wire.NewEnvelope(cmd.Envelope.SessionID, chunk, time.Now())
	if err != nil {
		return tamqp.Outcome{}, err
	}
	return tamqp.Outcome{Replies: []tamqp.Reply{{CallerID: caller, Envelope: env}}, Unrecorded: true}, nil
}

// readChunk reads n bytes at off of artifact a: from its file, or from its
// plaintext when it is sealed (opened whole with the agent's at-rest key,
// checked against the recorded size).
func (u *Uplink) readChunk(a reply.Artifact, name string, off int64, n int) ([]byte, error) {
	if a.Sealed {
		k := u.eng.AtRestKey()
		if k == nil {
			return nil, fmt.Errorf("%s is sealed and the agent has no at-rest key: %w", a.URI, atrest.ErrNoKey)
		}
		plain, err := k.ReadFile(a.Path, atrest.ArtifactBinding(a.SessionID, name))
		if err != nil {
			return nil, fmt.Errorf("%s cannot be opened: %w", a.URI, err)
		}
		if int64(len(plain)) != a.SizeBytes {
			return nil, fmt.Errorf("%s holds %d bytes, its session recorded %d", a.URI, len(plain), a.SizeBytes)
		}
		return plain[off : off+int64(n)], nil
	}
	f, err := os.Open(a.Path)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", a.URI, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != a.SizeBytes {
		return nil, fmt.Errorf("%s: the file is not the size its session recorded (%d bytes)", a.URI, a.SizeBytes)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s cannot be read: %w", a.URI, err)
	}
	return buf, nil
}

// fetchAudit is the detail of a refused fetch's data_access entry.
type fetchAudit struct {
	Caller    string `json:"caller"`
	User      string `json:"broker_user"`
	Access    string `json:"access"`
	Object    string `json:"object"`
	Via       string `json:"via"`
	DataClass string `json:"data_classification"`
	// MessageID is the refused artifact_request's, when it did not decode
	// (refusalaudit.go).
	MessageID string `json:"message_id,omitempty"`
	Refused   string `json:"refused"`
	Reason    string `json:"reason"`
}

// auditFetchTx appends d to the audit log in tx (the inbox's transaction,
// with the refusal it answers).
func auditFetchTx(tx *bolt.Tx, sid string, d fetchAudit) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = audit.AppendTx(tx, audit.Entry{SessionID: sid, At: time.Now(), Kind: audit.KindDataAccess, Detail: string(b)})
	return err
}
