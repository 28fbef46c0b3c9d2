package retention

import (
	"context"
	"fmt"
	"path/filepath"

	"hcp-edge/session/store"
)

// Usage is where the bytes of a state directory go: the state file (per
// bucket, per data class, its free pages), the artifacts (in all and per
// data class) and the result copies.
type Usage struct {
	Path  string      `json:"state_file"`
	State store.Usage `json:"state"`
	// Artifacts is the bytes of artifacts/; ArtifactsByClass splits those
	// of known sessions by data class ("orphaned": no session).
	Artifacts        int64            `json:"artifacts_bytes"`
	ArtifactsByClass map[string]int64 `json:"artifacts_by_class"`
	Results          int64            `json:"results_bytes"`
}

// Measure measures st's file and the artifact and result directories.
// It reads every page and every file: run it on demand.
func Measure(ctx context.Context, st *store.Store, artifactsDir, resultsDir string) (Usage, error) {
	var u Usage
	var err error
	u.Path = st.DB().Path()
	if u.State, err = st.Usage(ctx); err != nil {
		return u, fmt.Errorf("retention: usage: %w", err)
	}
	u.Artifacts, u.Results = dirBytes(artifactsDir), dirBytes(resultsDir)
	u.ArtifactsByClass = map[string]int64{}
	all, err := st.Sessions(ctx, false)
	if err != nil {
		return u, fmt.Errorf("retention: usage: %w", err)
	}
	var known int64
	for _, s := range all {
		if filepath.Base(s.ID) != s.ID || artifactsDir == "" {
			continue
		}
		n := dirBytes(filepath.Join(artifactsDir, s.ID))
		if n == 0 {
			continue
		}
		cl := s.DataClass
		if cl == "" {
			cl = "unclassified"
		}
		u.ArtifactsByClass[cl] += n
		known += n
	}
	if o := u.Artifacts - known; o > 0 {
		u.ArtifactsByClass["orphaned"] = o
	}
	return u, nil
}
