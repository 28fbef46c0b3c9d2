package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
	"hcp-edge/session/store"
)

// Reasons a session is pruned, in its audit entry and in Pruned.Reason.
const (
	ReasonRetention = "retention" // closed longer ago than its class's retention
	ReasonSize      = "size"      // the state directory above its ceiling
)

// Opts configures a Pruner.
type Opts struct {
	Policy Policy
	// ArtifactsDir holds artifacts/{session}/; "": none.
	ArtifactsDir string
	// ResultsDir holds results/{session}.json; "": none.
	ResultsDir string
	// Clock is the only time source (time.Now if nil).
	Clock func() time.Time
	// Every is the time between two passes of Start (default 1h).
	Every time.Duration
	// PerTx is how many sessions one transaction removes (default 4).
	PerTx int
	// Pause is the wait between two transactions of a pass (default 20ms):
	// the steps and the inbox get the file in between.
	Pause time.Duration
	// Logger (slog.Default if nil).
	Logger *slog.Logger
	// AuditArchiveDir, when set, is where each pass moves the audit
	// entries older than the policy's longest retention (auditarchive.go;
	// the daemon's is state_dir/audit-archive); "": the chain is kept
	// whole in the file.
	AuditArchiveDir string
}

// Pruned is one session removed.
type Pruned struct {
	SessionID string        `json:"session_id"`
	Class     string        `json:"data_classification"`
	Reason    string        `json:"reason"`
	ClosedAt  time.Time     `json:"closed_at"`
	Retention time.Duration `json:"retention_ns"`
	Removed   store.Removed `json:"removed"`
	Artifacts int           `json:"artifacts"` // files removed
	Results   bool          `json:"results"`   // results/{session}.json removed
}

// Report is what one pass did.
type Report struct {
	Pruned []Pruned `json:"pruned"`
	// Held counts the sessions past retention kept because their T4
	// access request still waits for an operator.
	Held int `json:"held"`
	// Bytes is the state directory's size after the pass (measured only
	// with a ceiling).
	Bytes int64 `json:"bytes,omitempty"`
	// OverCeiling: the ceiling is still exceeded and no closed session
	// older than MinAge is left to remove.
	OverCeiling bool `json:"over_ceiling,omitempty"`
	// Transactions is how many removing transactions the pass committed,
	// and LongestTx the longest of them, commit included: how long a step
	// may have waited for the file behind the pass.
	Transactions int           `json:"transactions"`
	LongestTx    time.Duration `json:"longest_tx_ns"`
	// AuditArchived is what the pass archived of the audit chain (nil:
	// nothing).
	AuditArchived *AuditArchived `json:"audit_archived,omitempty"`
}

// Pruner applies a Policy to a state file. Its methods are safe for
// concurrent use; passes run one at a time.
type Pruner struct {
	st  *store.Store
	o   Opts
	log *slog.Logger

	pass sync.Mutex // one pass at a time
	mu   sync.Mutex // guards cancel and done
	// cancel and done belong to the goroutine of Start.
	cancel context.CancelFunc
	done   chan struct{}
}

// New checks o.Policy (without a session length: see Policy.Validate)
// and returns a Pruner of st.
func New(st *store.Store, o Opts) (*Pruner, error) {
	if st == nil {
		return nil, errors.New("retention: New needs a store")
	}
	if err := o.Policy.Validate(0); err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Every <= 0 {
		o.Every = time.Hour
	}
	if o.PerTx <= 0 {
		o.PerTx = 4
	}
	if o.Pause <= 0 {
		o.Pause = 20 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Pruner{st: st, o: o, log: o.Logger}, nil
}

// Start runs a pass now and then every Opts.Every, in one goroutine that
// Close (or the end of ctx) stops. A failed pass is logged and tried
// again at the next tick.
func (p *Pruner) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return ErrStarted
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go p.loop(ctx, p.done)
	return nil
}

func (p *Pruner) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(p.o.Every)
	defer t.Stop()
	over := false // the last pass ended above the ceiling (warned once)
	for {
		r, err := p.Once(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Warn("retention pass failed; tried again at the next", "err", err, "every", p.o.Every)
		case len(r.Pruned) > 0:
			p.log.Info("retention pass", "pruned", len(r.Pruned), "held", r.Held, "bytes", r.Bytes, "over_ceiling", r.OverCeiling,
				"transactions", r.Transactions, "longest_tx", r.LongestTx)
		}
		switch {
		case err == nil && r.OverCeiling && !over:
			p.log.Warn("state directory above its ceiling (retention.max_state_mib) with no closed session old enough left to prune; said once until it is below again",
				"bytes", r.Bytes, "ceiling", p.o.Policy.MaxBytes, "min_age", p.o.Policy.MinAge)
		case err == nil && !r.OverCeiling && over:
			p.log.Info("state directory below its ceiling again", "bytes", r.Bytes, "ceiling", p.o.Policy.MaxBytes)
		}
		if err == nil {
			over = r.OverCeiling
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops the goroutine of Start and waits for it (a pass in progress
// ends after its current transaction). Close without Start does nothing.
func (p *Pruner) Close() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// candidate is a closed session and why it may go.
type candidate struct {
	sess      store.Session
	retention time.Duration
	reason    string
}

// Once runs one pass: the files of an interrupted earlier pass, then the
// closed sessions past their retention, then, above the ceiling, the
// oldest closed sessions older than MinAge, PerTx per transaction.
func (p *Pruner) Once(ctx context.Context) (Report, error) {
	p.pass.Lock()
	defer p.pass.Unlock()
	var r Report
	if err := p.finishPending(ctx); err != nil {
		return r, err
	}
	closed, err := p.st.Closed(ctx)
	if err != nil {
		return r, fmt.Errorf("retention: %w", err)
	}
	sort.Slice(closed, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b store.Session) int { return a.UpdatedAt.Compare(b.UpdatedAt) }(closed[i], closed[j]) < 0
	})
	now := p.o.Clock()
	var due, rest []candidate
	for _, s := range closed {
		ret := p.o.Policy.For(s.DataClass)
		if now.Sub(s.UpdatedAt) >= ret {
			due = append(due, candidate{s, ret, ReasonRetention})
		} else if now.Sub(s.UpdatedAt) >= p.o.Policy.MinAge {
			rest = append(rest, candidate{s, ret, ReasonSize})
		}
	}
	if err := p.remove(ctx, due, &r); err != nil {
		return r, err
	}
	if err := p.archiveAudit(ctx, now, &r); err != nil { // auditarchive.go
		return r, err
	}
	if p.o.Policy.MaxBytes <= 0 {
		return r, nil
	}
	for {
		if r.Bytes, err = p.Size(); err != nil {
			return r, err
		}
		if r.Bytes <= p.o.Policy.MaxBytes {
			return r, nil
		}
		if len(rest) == 0 {
			r.OverCeiling = true
			return r, nil
		}
		n := min(p.o.PerTx, len(rest))
		if err := p.remove(ctx, rest[:n], &r); err != nil {
			return r, err
		}
		rest = rest[n:]
	}
}

// remove removes cands, PerTx per transaction, each audited, then their
// files.
func (p *Pruner) remove(ctx context.Context, cands []candidate, r *Report) error {
	for i := 0; i < len(cands); i += p.o.PerTx {
		if i > 0 {
			if err := sleep(ctx, p.o.Pause); err != nil {
				return err
			}
		}
		batch := cands[i:min(i+p.o.PerTx, len(cands))]
		var done []Pruned
		held := 0
		t0 := time.Now()
		err := p.st.Update(ctx, func(w *store.Tx) error {
			done, held = done[:0], 0
			for _, c := range batch {
				pr, err := p.removeTx(ctx, w, c)
				if errors.Is(err, store.ErrAccessPending) {
					held++
					continue
				}
				if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotClosed) {
					continue // gone, or reopened by recovery since the listing: not ours
				}
				if err != nil {
					return err
				}
				done = append(done, pr)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		r.Transactions++
		r.LongestTx = max(r.LongestTx, time.Since(t0))
		r.Held += held
		for i := range done {
			done[i].Artifacts, done[i].Results = p.removeFiles(done[i].SessionID)
		}
		if err := p.clearPending(ctx, done); err != nil {
			return err
		}
		r.Pruned = append(r.Pruned, done...)
	}
	return nil
}

// auditDetail is the detail of a retention audit entry.
type auditDetail struct {
	Decision    string    `json:"decision"` // pruned
	Reason      string    `json:"reason"`
	Class       string    `json:"data_classification,omitempty"`
	ClosedAt    time.Time `json:"closed_at"`
	Retention   string    `json:"retention"`
	Events      int       `json:"events"`
	Checkpoints int       `json:"checkpoints"`
	Artifacts   int       `json:"artifacts"`
	Results     bool      `json:"results"`
	Bytes       int64     `json:"bytes"`
}

func (p *Pruner) removeTx(ctx context.Context, w *store.Tx, c candidate) (Pruned, error) {
	id := c.sess.ID
	rm, err := w.Remove(id)
	if err != nil {
		return Pruned{}, err
	}
	pr := Pruned{SessionID: id, Class: c.sess.DataClass, Reason: c.reason, ClosedAt: c.sess.UpdatedAt, Retention: c.retention, Removed: rm}
	arts, res := p.countFiles(id)
	b, err := json.Marshal(auditDetail{Decision: "pruned", Reason: c.reason, Class: pr.Class, ClosedAt: pr.ClosedAt,
		Retention: c.retention.String(), Events: rm.Events, Checkpoints: rm.Checkpoints, Artifacts: arts, Results: res, Bytes: rm.Bytes})
	if err != nil {
		return Pruned{}, fmt.Errorf("audit detail: %w", err)
	}
	if _, err := w.Audit(ctx, audit.Entry{SessionID: id, Kind: audit.KindRetention, Detail: string(b)}); err != nil {
		return Pruned{}, err
	}
	if err := markPending(w.Bolt(), id); err != nil {
		return Pruned{}, err
	}
	return pr, nil
}

// Size is the state directory's size as the ceiling counts it: what
// retention can remove. The state file's pages in use (its size less its
// free pages) less the audit log's pages (kept whole, never pruned: were
// they counted, a growing audit log would make the ceiling take every
// closed session and still not be met), plus the artifacts and the
// results.
func (p *Pruner) Size() (int64, error) {
	db := p.st.DB()
	var used int64
	err := db.View(func(tx *bolt.Tx) error {
		st, ps := db.Stats(), int64(db.Info().PageSize)
		used = tx.Size() - int64(st.FreePageN+st.PendingPageN)*ps
		for _, name := range audit.BucketNames() {
			if b := tx.Bucket(name); b != nil {
				bs := b.Stats()
				used -= int64(bs.BranchPageN+bs.BranchOverflowN+bs.LeafPageN+bs.LeafOverflowN) * ps
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("retention: size: %w", err)
	}
	return max(used, 0) + dirBytes(p.o.ArtifactsDir) + dirBytes(p.o.ResultsDir), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("retention: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
