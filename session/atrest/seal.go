package atrest

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Format version 1 (see the package documentation).
const (
	magic       = "\x89HCPAR"
	version1    = 1
	nonceSize   = 12
	tagSize     = 16
	headerSize  = len(magic) + 1 + keyIDSize + nonceSize
	minSealSize = headerSize + tagSize
)

// Overhead is how many bytes Seal adds to a plaintext.
const Overhead = minSealSize

// Purposes of a Binding.
const (
	PurposeCheckpoint = "checkpoint" // a checkpoint payload; Name is the checkpoint id
	PurposeArtifact   = "artifact"   // an artifact file; Name is its file name
	PurposeResult     = "result"     // a session's final message kept by the agent; Name is its type
	PurposeHeld       = "held"       // a T4 session's final message held for an access decision; Name is the access id
	PurposeEvent      = "event"      // the data of a stored L2 event; Name is its sequence number in decimal
	PurposeMessage    = "message"    // the body of an outbound message waiting in the outbox; Name is its message_id
)

// Binding is what a sealed blob is bound to: it opens only with the same
// session id, purpose and name.
type Binding struct {
	SessionID string
	Purpose   string
	Name      string
}

// CheckpointBinding binds a checkpoint payload to its session and
// checkpoint id.
func CheckpointBinding(sessionID, checkpointID string) Binding {
	return Binding{SessionID: sessionID, Purpose: PurposeCheckpoint, Name: checkpointID}
}

// ArtifactBinding binds an artifact file to its session and file name (the
// last segment of hcp://{session}/artifacts/{name}).
func ArtifactBinding(sessionID, name string) Binding {
	return Binding{SessionID: sessionID, Purpose: PurposeArtifact, Name: name}
}

// ResultBinding binds the agent's copy of a session's final message
// (task_completed, task_failed) to its session.
func ResultBinding(sessionID string) Binding {
	return Binding{SessionID: sessionID, Purpose: PurposeResult, Name: "final"}
}

// HeldBinding binds the final message a T4 session holds in the state file
// until an operator decides its access request to its session and the
// request's id.
func HeldBinding(sessionID, accessID string) Binding {
	return Binding{SessionID: sessionID, Purpose: PurposeHeld, Name: accessID}
}

// EventBinding binds the data of a stored event to its session and
// sequence number.
func EventBinding(sessionID string, seq uint64) Binding {
	return Binding{SessionID: sessionID, Purpose: PurposeEvent, Name: strconv.FormatUint(seq, 10)}
}

// MessageBinding binds the body of an outbound message waiting in the
// outbox to its session and message_id.
func MessageBinding(sessionID, messageID string) Binding {
	return Binding{SessionID: sessionID, Purpose: PurposeMessage, Name: messageID}
}

func (b Binding) check() error {
	if b.SessionID == "" || b.Purpose == "" {
		return fmt.Errorf("%w (%q, %q)", ErrBinding, b.SessionID, b.Purpose)
	}
	return nil
}

// aad is the additional authenticated data: the header, then each field
// of the binding with its length.
func (b Binding) aad(header []byte) []byte {
	ad := make([]byte, 0, len(header)+3*binary.MaxVarintLen64+len(b.SessionID)+len(b.Purpose)+len(b.Name))
	ad = append(ad, header...)
	for _, s := range []string{b.SessionID, b.Purpose, b.Name} {
		ad = binary.AppendUvarint(ad, uint64(len(s)))
		ad = append(ad, s...)
	}
	return ad
}

// Seal encrypts plaintext under k, bound to b, with a fresh random nonce,
// and returns the sealed blob (len(plaintext) + Overhead bytes).
func (k *Key) Seal(plaintext []byte, b Binding) ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	out := make([]byte, headerSize, headerSize+len(plaintext)+tagSize)
	copy(out, magic)
	out[len(magic)] = version1
	copy(out[len(magic)+1:], k.id[:])
	nonce := out[len(magic)+1+keyIDSize : headerSize]
	if _, err := rand.Read(nonce); err != nil { // never fails on Go ≥ 1.24 (it crashes instead)
		return nil, fmt.Errorf("atrest: nonce: %w", err)
	}
	return k.aead.Seal(out, nonce, plaintext, b.aad(out[:headerSize])), nil
}

// Header is what a sealed blob says about itself without a key.
type Header struct {
	Version int
	KeyID   string // hex, as Key.ID
	Size    int    // of the plaintext
}

// IsSealed reports whether blob starts with the magic of a sealed blob.
func IsSealed(blob []byte) bool { return bytes.HasPrefix(blob, []byte(magic)) }

// Inspect reads the header of a sealed blob: ErrNotSealed, ErrVersion or
// ErrTruncated when it is none. It does not authenticate anything.
func Inspect(blob []byte) (Header, error) {
	switch {
	case !IsSealed(blob):
		if len(blob) < len(magic) && bytes.HasPrefix([]byte(magic), blob) && len(blob) > 0 {
			return Header{}, fmt.Errorf("%w: %d bytes", ErrTruncated, len(blob))
		}
		return Header{}, ErrNotSealed
	case len(blob) <= len(magic):
		return Header{}, fmt.Errorf("%w: %d bytes", ErrTruncated, len(blob))
	case blob[len(magic)] != version1:
		return Header{}, fmt.Errorf("%w: %d", ErrVersion, blob[len(magic)])
	case len(blob) < minSealSize:
		return Header{}, fmt.Errorf("%w: %d bytes, a sealed blob has at least %d", ErrTruncated, len(blob), minSealSize)
	}
	return Header{Version: version1, KeyID: hex.EncodeToString(blob[len(magic)+1 : len(magic)+1+keyIDSize]),
		Size: len(blob) - minSealSize}, nil
}

// Open authenticates and decrypts a blob sealed by Seal under k for b. A
// blob of another key is a *WrongKeyError; one that fails authentication
// (altered, or sealed for another binding) ErrTampered; see Inspect for
// the others. Open never panics, whatever blob holds.
func (k *Key) Open(blob []byte, b Binding) ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	if _, err := Inspect(blob); err != nil {
		return nil, err
	}
	id := blob[len(magic)+1 : len(magic)+1+keyIDSize]
	if !bytes.Equal(id, k.id[:]) {
		return nil, &WrongKeyError{Have: k.ID(), Want: hex.EncodeToString(id)}
	}
	header := blob[:headerSize]
	nonce := blob[len(magic)+1+keyIDSize : headerSize]
	plain, err := k.aead.Open(make([]byte, 0, len(blob)-minSealSize), nonce, blob[headerSize:], b.aad(header))
	if err != nil {
		return nil, ErrTampered
	}
	return plain, nil
}
