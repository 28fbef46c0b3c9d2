package atrest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"unicode"
)

// KeySize is the size of an at-rest key: AES-256.
const KeySize = 32

// keyIDSize is how many bytes of the key's hash name it in a sealed blob.
const keyIDSize = 8

// maxKeyFile bounds what LoadKey reads: 64 hex digits and some white space.
const maxKeyFile = 256

// keyIDDomain separates the key id's hash from any other use of the key.
const keyIDDomain = "hcp-edge atrest key id v1\x00"

// Key is an AES-256-GCM at-rest key. It is safe for concurrent use.
type Key struct {
	aead   cipher.AEAD
	id     [keyIDSize]byte
	source string
}

// NewKey makes a Key of 32 raw bytes (not all zero). raw is not retained.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("%w: %d bytes", ErrKeyFormat, len(raw))
	}
	if subtle.ConstantTimeCompare(raw, make([]byte, KeySize)) == 1 {
		return nil, fmt.Errorf("%w: all zero", ErrKeyFormat)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("atrest: %w", err)
	}
	aead, err := cipher.NewGCM(block) // 12-byte nonce, 16-byte tag
	if err != nil {
		return nil, fmt.Errorf("atrest: %w", err)
	}
	k := &Key{aead: aead}
	h := sha256.New()
	h.Write([]byte(keyIDDomain))
	h.Write(raw)
	copy(k.id[:], h.Sum(nil))
	return k, nil
}

// ParseKey makes a Key of 64 hex digits (either case; white space around
// them is ignored).
func ParseKey(text []byte) (*Key, error) {
	raw, reason := decodeHex(text)
	if reason != "" {
		return nil, fmt.Errorf("%w: %s", ErrKeyFormat, reason)
	}
	defer clear(raw)
	k, err := NewKey(raw)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// decodeHex decodes the key text, or says what is wrong with it without
// repeating any of it.
func decodeHex(text []byte) ([]byte, string) {
	start, end := 0, len(text)
	for start < end && unicode.IsSpace(rune(text[start])) {
		start++
	}
	for end > start && unicode.IsSpace(rune(text[end-1])) {
		end--
	}
	t := text[start:end]
	switch {
	case len(t) == 0:
		return nil, "empty"
	case len(t) != 2*KeySize:
		return nil, fmt.Sprintf("%d characters, want %d hex digits", len(t), 2*KeySize)
	}
	raw := make([]byte, KeySize)
	if _, err := hex.Decode(raw, t); err != nil {
		clear(raw)
		return nil, "not hexadecimal"
	}
	return raw, ""
}

// LoadKey loads the key file at path: a regular file, readable by its
// owner only (mode 0600 or stricter), holding 64 hex digits. Any problem is
// a *KeyError (ErrKeyPermissions, ErrKeyFormat, or the file system's).
func LoadKey(path string) (*Key, error) {
	perm := func(fi os.FileInfo) error {
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
			return &KeyError{Path: path, Mode: fi.Mode(), Err: ErrKeyPermissions}
		}
		return nil
	}
	// Stat before opening: opening a FIFO would block.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &KeyError{Path: path, Err: err}
	}
	if err := perm(fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &KeyError{Path: path, Err: err}
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, &KeyError{Path: path, Err: err}
	}
	if err := perm(fi); err != nil { // replaced between the two looks
		return nil, err
	}
	text, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	defer clear(text)
	if err != nil {
		return nil, &KeyError{Path: path, Mode: fi.Mode(), Err: err}
	}
	if len(text) > maxKeyFile {
		return nil, &KeyError{Path: path, Mode: fi.Mode(), Reason: fmt.Sprintf("longer than %d bytes", maxKeyFile), Err: ErrKeyFormat}
	}
	raw, reason := decodeHex(text)
	if reason != "" {
		return nil, &KeyError{Path: path, Mode: fi.Mode(), Reason: reason, Err: ErrKeyFormat}
	}
	defer clear(raw)
	k, err := NewKey(raw)
	if err != nil {
		return nil, &KeyError{Path: path, Mode: fi.Mode(), Reason: "all zero", Err: ErrKeyFormat}
	}
	k.source = path
	return k, nil
}

// ID names the key: 16 hex digits of a hash of it, also written in every
// blob it seals. It does not reveal the key.
func (k *Key) ID() string { return hex.EncodeToString(k.id[:]) }

// Source is the file the key was loaded from ("" for NewKey and ParseKey).
func (k *Key) Source() string { return k.source }

// String names the key by its id and source, never its bytes.
func (k *Key) String() string {
	if k.source == "" {
		return "at-rest key " + k.ID()
	}
	return fmt.Sprintf("at-rest key %s (%s)", k.ID(), k.source)
}
