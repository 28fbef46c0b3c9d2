package token

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyFileMode is the only permission a signing key file may have.
const KeyFileMode fs.FileMode = 0o600

// LoadOrCreateKey returns the Ed25519 signing key stored at path, creating
// it (mode 0600, PKCS#8 PEM) on first start. A key file that group or others
// may read or write, or that is not a regular file, is refused with an error
// that names the file and the fix; so is one that does not hold an Ed25519
// key. Creation is atomic: two processes starting together load the same key.
func LoadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	k, err := LoadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("token: generate key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: marshalPKCS8(priv)})
	if err := writeNew(path, data); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process won the race
			return LoadKey(path)
		}
		return nil, err
	}
	return priv, nil
}

// pkcs8Ed25519Prefix is the DER of an Ed25519 PrivateKeyInfo (RFC 8410,
// section 7) up to its 32-byte seed: SEQUENCE { INTEGER 0, SEQUENCE { OID
// 1.3.101.112 }, OCTET STRING { OCTET STRING (32 bytes) } }.
var pkcs8Ed25519Prefix = [...]byte{0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20}

// marshalPKCS8 is x509.MarshalPKCS8PrivateKey for an Ed25519 key: the same
// DER (TestMarshalPKCS8AsX509), without linking x509's encoders of RSA, ECDSA
// and ECDH keys and encoding/asn1's marshalling (12,288 bytes of the armv7
// binary; docs/FOOTPRINT.md, eighth round).
func marshalPKCS8(priv ed25519.PrivateKey) []byte {
	return append(pkcs8Ed25519Prefix[:], priv.Seed()...)
}

// writeNew writes data to a temporary file of mode 0600 beside path, syncs
// it, and links it to path, failing with fs.ErrExist if path exists.
func writeNew(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("token: key directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".session-key-*")
	if err != nil {
		return fmt.Errorf("token: create key file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = f.Chmod(KeyFileMode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("token: write key file %s: %w", tmp, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("token: install key file %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: make the link durable
		d.Close()
	}
	return nil
}

// LoadKey reads an existing signing key; see LoadOrCreateKey for the checks.
// A missing file is an error matching fs.ErrNotExist.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("token: key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token: key file %s is not a regular file (%v): %w; remove it so a new key is generated",
			path, fi.Mode().Type(), ErrKeyFile)
	}
	if perm := fi.Mode().Perm(); perm&^KeyFileMode != 0 {
		return nil, fmt.Errorf("token: key file %s has mode %04o, readable or writable by others: %w; fix with `chmod 600 %s` (and check who read it; delete it to generate a new key)",
			path, perm, ErrKeyFile, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token: key file: %w", err)
	}
	blk, _ := pem.Decode(data)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("token: key file %s holds no PKCS#8 PEM block: %w; delete it to generate a new key", path, ErrKeyFile)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("token: key file %s: %w: %v", path, ErrKeyFile, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("token: key file %s holds a %T, want an Ed25519 key: %w", path, k, ErrKeyFile)
	}
	return priv, nil
}
