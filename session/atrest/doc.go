// Package atrest seals the data of T3/T4 sessions at rest: checkpoint
// payloads, event data and the bodies of outbound messages waiting in the
// outbox in the state file, and artifact files in the state directory
// (spec/hcp/L3-safety-contract.md, "Data Classification": T3 and T4 need
// encryption in transit and at rest). It is AES-256-GCM from the standard
// library (crypto/aes, crypto/cipher) under one key per agent.
//
// # Concepts
//
// A Key is loaded from a file of 64 hex digits (LoadKey) that must be a
// regular file readable by its owner only (mode 0600 or stricter); anything
// else is a *KeyError matching ErrKeyPermissions or ErrKeyFormat. Its ID is
// the first 8 bytes of SHA-256 over a domain string and the key: it names
// the key in logs and in every sealed blob, never reveals it.
//
// Seal returns a self-describing blob (format version 1):
//
//	offset  size  field
//	0       6     magic "\x89HCPAR"
//	6       1     version (1)
//	7       8     key id
//	15      12    nonce (crypto/rand, fresh for every Seal)
//	27      n+16  AES-256-GCM ciphertext of the n plaintext bytes and its tag
//
// The additional authenticated data is the 27-byte header followed by the
// Binding — session id, purpose ("checkpoint", "artifact", "event",
// "message"...) and name (the checkpoint id, the artifact's file name, the
// event's sequence number, the message_id), each length-prefixed — so a
// blob only opens for the session, purpose and name it was sealed for: a
// blob copied to another session, another artifact or another checkpoint
// fails as ErrTampered, as does any flipped bit of header, nonce,
// ciphertext or tag. A blob sealed under another key fails as
// ErrWrongKey (a *WrongKeyError naming both key ids) before any
// decryption; one shorter than header and tag as ErrTruncated; one without
// the magic as ErrNotSealed; an unknown version as ErrVersion. Open never
// panics on any input (FuzzOpen).
//
// WriteFile and ReadFile are the whole-file helpers for artifacts: the
// sealed blob is written to a temporary file in the same directory, synced
// and renamed, so a reader sees the old file or the whole new one.
//
// # Caveats
//
// Nonces are random (96 bits), which bounds one key to about 2^32 seals
// before the collision risk becomes non-negligible (NIST SP 800-38D §8.3);
// an agent sealing a checkpoint every few minutes is many orders of
// magnitude below. Files are sealed whole, in memory: artifacts are the
// executors' in-memory results (kilobytes to a few megabytes), not
// streams. There is no key rotation yet: a blob names its key id, so a
// later keyring can pick the right key; today a different key is refused
// with ErrWrongKey.
package atrest
