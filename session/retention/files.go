package retention

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/store"
)

// bucketPending holds the ids of sessions whose records are removed and
// whose files may not be yet (id → nothing).
var bucketPending = []byte("retention_pending")

func markPending(tx *bolt.Tx, id string) error {
	b, err := tx.CreateBucketIfNotExists(bucketPending)
	if err != nil {
		return fmt.Errorf("retention: bucket %s: %w", bucketPending, err)
	}
	return b.Put([]byte(id), nil)
}

// finishPending removes the files of the ids an earlier pass left in
// bucketPending (a crash after its commit), then clears them.
func (p *Pruner) finishPending(ctx context.Context) error {
	var ids []string
	err := p.st.DB().View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPending)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	if err != nil || len(ids) == 0 {
		return err
	}
	var prs []Pruned
	for _, id := range ids {
		p.removeFiles(id)
		prs = append(prs, Pruned{SessionID: id})
	}
	p.log.Info("retention: files of sessions pruned before an interruption removed", "sessions", len(ids))
	return p.clearPending(ctx, prs)
}

// clearPending clears the ids of prs from bucketPending once their files
// are gone.
func (p *Pruner) clearPending(ctx context.Context, prs []Pruned) error {
	if len(prs) == 0 {
		return nil
	}
	err := p.st.Update(ctx, func(w *store.Tx) error {
		b := w.Bolt().Bucket(bucketPending)
		if b == nil {
			return nil
		}
		for _, pr := range prs {
			if err := b.Delete([]byte(pr.SessionID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("retention: clear pending: %w", err)
	}
	return nil
}

// paths returns the artifact directory and the result file of session id
// ("" where the Pruner has no such directory). A session id is a
// store-checked id; one that is not a single path element is refused, so
// no removal leaves the directories.
func (p *Pruner) paths(id string) (arts, result string) {
	if id == "" || id == "." || id == ".." || filepath.Base(id) != id {
		return "", ""
	}
	if p.o.ArtifactsDir != "" {
		arts = filepath.Join(p.o.ArtifactsDir, id)
	}
	if p.o.ResultsDir != "" {
		result = filepath.Join(p.o.ResultsDir, id+".json")
	}
	return arts, result
}

// countFiles counts session id's artifact files and whether it has a
// result copy.
func (p *Pruner) countFiles(id string) (arts int, result bool) {
	ad, rf := p.paths(id)
	if ad != "" {
		_ = filepath.WalkDir(ad, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				arts++
			}
			return nil
		})
	}
	if rf != "" {
		_, err := os.Lstat(rf)
		result = err == nil
	}
	return arts, result
}

// removeFiles removes session id's artifacts and result copy; a failure
// is logged (the id stays pending only until clearPending: the records
// are gone, a file left is garbage, not state).
func (p *Pruner) removeFiles(id string) (arts int, result bool) {
	arts, result = p.countFiles(id)
	ad, rf := p.paths(id)
	if ad != "" {
		if err := os.RemoveAll(ad); err != nil {
			p.log.Warn("retention: artifacts not removed", "session", id, "err", err)
		}
	}
	if rf != "" {
		if err := os.Remove(rf); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("retention: result copy not removed", "session", id, "err", err)
		}
	}
	return arts, result
}

// dirBytes is the size of the regular files under dir (0 if it does not
// exist).
func dirBytes(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// FilesUsage is the bytes of the artifacts and of the result copies.
type FilesUsage struct {
	Artifacts int64 `json:"artifacts_bytes"`
	Results   int64 `json:"results_bytes"`
}

// Files measures the Pruner's artifact and result directories.
func (p *Pruner) Files() FilesUsage {
	return FilesUsage{Artifacts: dirBytes(p.o.ArtifactsDir), Results: dirBytes(p.o.ResultsDir)}
}
