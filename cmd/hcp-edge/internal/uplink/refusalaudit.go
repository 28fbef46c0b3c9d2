package uplink

import (
	"encoding/json"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
	"hcp-edge/session/store"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/wire"
)

// auditRefusal is the inbox's InboxOpts.Refused. An extension request the
// inbox refused before the uplink saw it (it did not decode) is audited as
// the uplink's own refusals of it are, in the transaction that queues the
// inbox's request_refused (or in one of its own when the login maps to no
// caller and nobody is answered): a capabilities_request as a discovery
// entry, an artifact_request as a data_access entry of the session it
// names when that is a session of this agent (else of none). What the
// entry says of the caller is the broker-validated login and the caller it
// maps to, never a field of the refused message. Other commands are not
// audited here: the inbox logs them, and the gate audits the submits it
// decides.
func (u *Uplink) auditRefusal(tx *bolt.Tx, r tamqp.Refusal) error {
	if !r.Type.IsRequest() {
		return nil
	}
	var (
		kind = audit.KindDiscovery
		sid  string
		d    any
	)
	switch r.Type {
	case wire.TypeCapabilitiesRequest, wire.TypePreviewRequest:
		d = discoveryAudit{Caller: r.CallerID, User: r.UserID, Request: string(r.Type), MessageID: r.MessageID,
			Refused: r.Reason, Reason: r.Detail}
	default: // artifact_request
		kind = audit.KindDataAccess
		fa := fetchAudit{Caller: r.CallerID, User: r.UserID, Access: "artifact_fetch", Via: fetchVia, MessageID: r.MessageID,
			Refused: r.Reason, Reason: r.Detail}
		if r.SessionID != "" {
			w, err := u.st.Bind(tx)
			if err != nil {
				return err
			}
			sess, err := w.Session(r.SessionID)
			switch {
			case err == nil:
				sid, fa.DataClass = r.SessionID, sess.DataClass
			case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrBadID):
				return err
			}
		}
		d = fa
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = audit.AppendTx(tx, audit.Entry{SessionID: sid, At: time.Now(), Kind: kind, Detail: string(b)})
	return err
}
