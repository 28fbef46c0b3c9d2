package store

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// BucketUsage is the space one top-level bucket of the state file takes.
type BucketUsage struct {
	Name string `json:"name"`
	// Keys counts the keys in the bucket and its nested buckets.
	Keys int `json:"keys"`
	// Bytes is the bytes in use in the bucket's pages, nested buckets
	// included (bbolt's BranchInuse + LeafInuse; InlineBucketInuse for a
	// bucket small enough to live inline in the root page).
	Bytes int64 `json:"bytes"`
}

// ClassUsage is what the sessions of one data classification take: the
// bytes of their records, events and checkpoints (keys and values; the
// audit entries are counted with the audit buckets).
type ClassUsage struct {
	Class    string `json:"class"`
	Sessions int    `json:"sessions"`
	Closed   int    `json:"closed"`
	Bytes    int64  `json:"bytes"`
}

// Usage is where the bytes of the state file go.
type Usage struct {
	FileBytes int64 `json:"file_bytes"` // the file's size on disk
	PageSize  int   `json:"page_size"`
	// FreeBytes are pages inside the file that bbolt will reuse (free and
	// pending): what `hcp-edge state compact` gives back to the file system
	// (estimated from the buckets' pages when the file is open read-only).
	FreeBytes int64         `json:"free_bytes"`
	Buckets   []BucketUsage `json:"buckets"` // by name
	Classes   []ClassUsage  `json:"classes"` // by class
}

// Usage measures the state file in one read transaction: its size, its
// free pages, the bytes of each top-level bucket and of the sessions of
// each data classification. It reads every page: run it on demand, not on
// a timer. While its read transaction is open bbolt cannot grow its
// mmap, so a write that needs a larger one waits for it (tens of
// milliseconds for a file of tens of MB here).
func (s *Store) Usage(ctx context.Context) (Usage, error) {
	var u Usage
	err := s.view(ctx, func(tx *bolt.Tx) error {
		u.PageSize = tx.DB().Info().PageSize
		if st, err := os.Stat(tx.DB().Path()); err == nil {
			u.FileBytes = st.Size()
		}
		var pages int64 // pages of the buckets
		err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			st := b.Stats()
			pages += int64(st.BranchPageN + st.BranchOverflowN + st.LeafPageN + st.LeafOverflowN)
			n := int64(st.BranchInuse + st.LeafInuse)
			if st.BranchPageN+st.LeafPageN == 0 {
				n = int64(st.InlineBucketInuse) // a small bucket kept inline in the root page
			}
			u.Buckets = append(u.Buckets, BucketUsage{Name: string(name), Keys: st.KeyN, Bytes: n})
			return nil
		})
		if err != nil {
			return err
		}
		if fl := tx.DB().Stats(); !tx.DB().IsReadOnly() {
			u.FreeBytes = int64(fl.FreePageN+fl.PendingPageN) * int64(u.PageSize)
		} else {
			// Read-only, bbolt has not loaded the freelist: what the
			// buckets, the two meta pages, the root and the freelist do not
			// use, of the pages written so far.
			u.FreeBytes = max(tx.Size()-(pages+4)*int64(u.PageSize), 0)
		}
		classes := map[string]*ClassUsage{}
		err = tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("store: usage: %w", err)
			}
			var sess Session
			if _, err := sess.UnmarshalMsg(v); err != nil {
				return &CorruptError{Session: string(k), Reason: "session record: " + err.Error()}
			}
			cl := sess.DataClass
			if cl == "" {
				cl = "unclassified"
			}
			c := classes[cl]
			if c == nil {
				c = &ClassUsage{Class: cl}
				classes[cl] = c
			}
			c.Sessions++
			if sess.State.Terminal() {
				c.Closed++
			}
			c.Bytes += int64(len(k) + len(v))
			for _, parent := range [][]byte{bucketEvents, bucketCheckpoints} {
				if sb := tx.Bucket(parent).Bucket(k); sb != nil {
					_ = sb.ForEach(func(k, v []byte) error {
						c.Bytes += int64(len(k) + len(v))
						return nil
					})
				}
			}
			return nil
		})
		for _, c := range classes {
			u.Classes = append(u.Classes, *c)
		}
		sort.Slice(u.Classes, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
			return func(a, b ClassUsage) int { return strings.Compare(a.Class, b.Class) }(u.Classes[i], u.Classes[j]) < 0
		})
		return err
	})
	return u, err
}
