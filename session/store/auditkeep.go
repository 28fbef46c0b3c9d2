package store

import bolt "go.etcd.io/bbolt"

// KeepsAuditOf reports, in tx, whether the store still holds session id's
// record: while it does, the session's data is retained and its audit
// entries stay in the file (audit.ArchiveOpts.Keep; Check replays them).
func KeepsAuditOf(tx *bolt.Tx, id string) bool {
	b := tx.Bucket(bucketSessions)
	return b != nil && b.Get([]byte(id)) != nil
}
