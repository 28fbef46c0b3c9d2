package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/export"
	"hcp-edge/cmd/hcp-edge/internal/hub"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/atrest"
	"hcp-edge/session/eln"
	"hcp-edge/session/engine"
)

// exportOp serves export: session req.ID's .eln archive, under the rules
// of an artifact fetch — a T4 session's needs an unexpired access approval
// (checked first, so that a refusal names what to run), and the export of
// a T2+ session is recorded as an access (kind data_access, access
// "export") before the archive is handed over.
func (s *sessions) exportOp(ctx context.Context, req control.Request) (any, error) {
	if req.ID == "" {
		return nil, errors.New("export needs a session id")
	}
	object := export.URI(req.ID)
	sess, err := s.st.Session(ctx, req.ID)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", req.ID, err)
	}
	t4 := engine.NeedsAccessApproval(sess.DataClass)
	if t4 {
		if s.eng == nil {
			return nil, fmt.Errorf("session %s is %s and no session engine runs to check its access approval", req.ID, sess.DataClass)
		}
		if err := s.eng.CheckRead(ctx, req.ID, req.Operator, object); err != nil {
			s.refusedRead(ctx, req.ID, sess.DataClass, control.Request{Operator: req.Operator, URI: object}, err)
			return nil, err
		}
	}
	data, err := export.Build(ctx, s.exportSource(), req.ID)
	if err != nil {
		return nil, err
	}
	if t4 {
		if err := s.eng.ReadAccess(ctx, req.ID, req.Operator, "export", object, "control socket"); err != nil {
			return nil, err
		}
	} else if err := auditaccess.Record(ctx, s.st, req.ID, "export", object, auditaccess.Accessor{Operator: req.Operator, Via: "control socket"}); err != nil {
		return nil, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	s.log.Info("session exported", "session", req.ID, "operator", req.Operator, "bytes", len(data), "data_classification", sess.DataClass)
	return reply.Export{SessionID: req.ID, Name: export.FileName(req.ID), Data: data}, nil
}

// exportSource is where the daemon's exports read.
func (s *sessions) exportSource() export.Source {
	src := export.Source{Store: s.st, StateDir: s.stateDir, Version: s.version, Instruments: export.InstrumentsOf(s.rig)}
	if s.eng != nil {
		src.Key = s.eng.AtRestKey()
	}
	return src
}

// fetchable is the artifact lookup of the uplink's artifact_request: every
// artifact of a session's final message (artifact), and its .eln archive
// under the reserved name export.ArtifactName (hcp://{session}/artifacts/record.eln,
// docs/PROTOCOL-NOTES.md). The archive is built at its first fetch and
// kept beside the session's artifacts (sealed like them for T3/T4;
// retention removes it with them), so that every chunk of a transfer
// comes from the same bytes; `hcp-edge export` builds a fresh one. The
// uplink checks the owner, a T4 release and records the access before it
// asks for the file.
func (s *sessions) fetchable(uri string) (reply.Artifact, error) {
	sid, name, err := reply.ParseArtifactURI(uri)
	if err != nil || name != export.ArtifactName {
		return s.artifact(uri)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := s.st.Session(ctx, sid)
	if err != nil {
		return reply.Artifact{}, fmt.Errorf("session %s: %w", sid, err)
	}
	v := reply.Artifact{URI: uri, SessionID: sid, Name: name, Path: filepath.Join(s.stateDir, rigconfig.ArtifactsDir, sid, name),
		Type: eln.MIME, DataClass: sess.DataClass, Sealed: engine.Sealed(sess.DataClass)}
	var key *atrest.Key
	if v.Sealed {
		if s.eng != nil {
			key = s.eng.AtRestKey()
		}
		if key == nil {
			return reply.Artifact{}, fmt.Errorf("session %s is %s and the agent has no at-rest key: %w", sid, sess.DataClass, atrest.ErrNoKey)
		}
		v.KeyFile, v.KeyID = key.Source(), key.ID()
	}
	s.exportMu.Lock()
	defer s.exportMu.Unlock()
	var data []byte
	switch b, err := os.ReadFile(v.Path); {
	case err == nil && key != nil:
		if data, err = key.Open(b, atrest.ArtifactBinding(sid, name)); err != nil {
			return reply.Artifact{}, fmt.Errorf("%s: %w", v.Path, err)
		}
	case err == nil:
		data = b
	case errors.Is(err, os.ErrNotExist):
		if data, err = export.Build(ctx, s.exportSource(), sid); err != nil {
			return reply.Artifact{}, err
		}
		if err := os.MkdirAll(filepath.Dir(v.Path), 0o750); err != nil {
			return reply.Artifact{}, err
		}
		if key != nil {
			err = key.WriteFile(v.Path, data, atrest.ArtifactBinding(sid, name), 0o640)
		} else {
			err = hub.WriteFileAtomic(v.Path, data)
		}
		if err != nil {
			return reply.Artifact{}, fmt.Errorf("session %s: its .eln archive: %w", sid, err)
		}
		s.log.Info("session archive built for a fetch", "session", sid, "bytes", len(data))
	default:
		return reply.Artifact{}, err
	}
	sum := sha256.Sum256(data)
	v.SizeBytes, v.Checksum = int64(len(data)), "sha256:"+hex.EncodeToString(sum[:])
	return v, nil
}
