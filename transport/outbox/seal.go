package outbox

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Sealer seals the bodies of outbound messages at rest. The outbox cannot
// name the agent's at-rest key, nor know which session's data is sealed
// (transport imports no session package): the agent supplies one
// (cmd/hcp-edge/internal/uplink seals the messages of T3/T4 sessions).
// It is safe for concurrent use.
type Sealer interface {
	// SealTx returns m's body sealed when m carries data sealed at rest,
	// nil to store m as it is, or an error that refuses the append (a
	// message that must be sealed and cannot be). tx is the appending
	// transaction (AppendTx, SealTx), nil for Append and AppendAsync.
	SealTx(tx *bolt.Tx, m *Message) ([]byte, error)
	// OpenBody returns the plaintext of m's sealed body (m.Sealed).
	OpenBody(m *Message) ([]byte, error)
}

// seal replaces m's body by its sealed form when the Sealer asks for it.
// A message already sealed (a record appended again: the command inbox's
// recorded replies) and one marked Clear are stored as they are.
func (ob *Outbox) seal(tx *bolt.Tx, m *Message) error {
	if ob.opts.Sealer == nil || m.Sealed || m.Clear {
		return nil
	}
	b, err := ob.opts.Sealer.SealTx(tx, m)
	if err != nil {
		return fmt.Errorf("outbox: seal %s %s: %w", m.Type, m.MessageID, err)
	}
	if b != nil {
		m.Body, m.Sealed = b, true
	}
	return nil
}

// open replaces the sealed body of m, stored under key, by its plaintext.
func (ob *Outbox) open(key uint64, m *Message) error {
	if !m.Sealed {
		return nil
	}
	if ob.opts.Sealer == nil {
		return fmt.Errorf("%w: key %d (%s %s)", ErrSealed, key, m.Type, m.MessageID)
	}
	b, err := ob.opts.Sealer.OpenBody(m)
	if err != nil {
		return fmt.Errorf("outbox: key %d (%s %s) does not open: %w", key, m.Type, m.MessageID, err)
	}
	m.Body, m.Sealed = b, false
	return nil
}

// SealTx seals, in place, the messages of ms the Sealer chooses, as
// AppendTx would store them, inside tx: the command inbox records its
// replies sealed in its de-duplication window before it appends them.
// Messages already sealed are left as they are.
func (ob *Outbox) SealTx(tx *bolt.Tx, ms []Message) error {
	for i := range ms {
		if ms[i].CreatedUnixNano == 0 {
			ms[i].CreatedUnixNano = ob.opts.Now().UnixNano()
		}
		if err := ob.seal(tx, &ms[i]); err != nil {
			return err
		}
	}
	return nil
}
