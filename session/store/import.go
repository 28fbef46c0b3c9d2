package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketImports records the files Import has merged (base name → time).
var bucketImports = []byte("imports")

// Import merges the top-level buckets named in buckets of the bbolt file at
// path (an older layout kept the outbox and the inbox's de-duplication
// window in a file of their own) into the state file, in one transaction:
// every key, nested bucket and bucket sequence is copied as it is, so the
// outbox keeps its keys and its next key. It records the import under the
// file's base name, so a second call after a crash between the commit and
// the removal of the old file copies nothing again. A bucket the state file
// already holds (not from an earlier import of this file) is refused: two
// outboxes are not merged.
//
// done reports that the file's contents are in the state file (now or
// before): the caller may then rename or remove it. A missing file is
// (false, nil).
func (s *Store) Import(path string, buckets ...string) (done bool, err error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	name := []byte(filepath.Base(path))
	var already bool
	if err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketImports); b != nil && b.Get(name) != nil {
			already = true
		}
		return nil
	}); err != nil {
		return false, err
	}
	if already {
		return true, nil
	}
	old, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return false, fmt.Errorf("store: import %s: %w", path, err)
	}
	defer old.Close()
	err = old.View(func(src *bolt.Tx) error {
		return s.db.Update(func(dst *bolt.Tx) error {
			for _, bn := range buckets {
				sb := src.Bucket([]byte(bn))
				if sb == nil {
					continue
				}
				if dst.Bucket([]byte(bn)) != nil {
					return fmt.Errorf("store: import %s: the state file already has a bucket %q; move one of the two aside", path, bn)
				}
				db, err := dst.CreateBucket([]byte(bn))
				if err != nil {
					return err
				}
				if err := copyBucket(db, sb); err != nil {
					return fmt.Errorf("store: import %s: bucket %q: %w", path, bn, err)
				}
			}
			ib, err := dst.CreateBucketIfNotExists(bucketImports)
			if err != nil {
				return err
			}
			return ib.Put(name, []byte(s.clock().UTC().Format(time.RFC3339Nano)))
		})
	})
	if err != nil {
		return false, err
	}
	return true, nil
}

// copyBucket copies every key, nested bucket and the sequence of src into
// dst.
func copyBucket(dst, src *bolt.Bucket) error {
	if err := dst.SetSequence(src.Sequence()); err != nil {
		return err
	}
	return src.ForEach(func(k, v []byte) error {
		if v != nil {
			return dst.Put(append([]byte(nil), k...), append([]byte(nil), v...))
		}
		nb, err := dst.CreateBucket(append([]byte(nil), k...))
		if err != nil {
			return err
		}
		return copyBucket(nb, src.Bucket(k))
	})
}
