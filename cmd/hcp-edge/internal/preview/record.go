package preview

import (
	"context"
	"sync"

	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
)

// timedRecipe times each step of the recipe it wraps in virtual time.
type timedRecipe struct {
	executor.Recipe
	r *run
}

func newTimedRecipe(rec executor.Recipe, r *run) *timedRecipe {
	steps := rec.Steps()
	r.mu.Lock()
	r.names = make([]string, len(steps))
	for i, s := range steps {
		r.names[i] = s.Name
	}
	r.spans = make([]span, len(steps))
	r.mu.Unlock()
	return &timedRecipe{Recipe: rec, r: r}
}

// Run runs step i and records when it started and ended.
func (t *timedRecipe) Run(ctx context.Context, i int, env *executor.Env) error {
	start := t.r.clock.Elapsed()
	t.r.mu.Lock()
	t.r.step = i
	t.r.spans[i] = span{start: start, end: -1, ran: true}
	t.r.mu.Unlock()
	err := t.Recipe.Run(ctx, i, env)
	t.r.mu.Lock()
	t.r.spans[i].end = t.r.clock.Elapsed()
	t.r.mu.Unlock()
	return err
}

// Emit keeps the warnings of the run; the rest of the events is discarded.
func (r *run) Emit(_ context.Context, t lifecycle.EventType, data any) error {
	if w, ok := data.(executor.Warning); ok && t == lifecycle.EventWarning {
		r.mu.Lock()
		r.warns = append(r.warns, w.Message)
		r.mu.Unlock()
	}
	return nil
}

// discard is a Checkpointer that keeps nothing: a preview is never resumed.
type discard struct{}

func (discard) Checkpoint(context.Context, executor.Checkpoint) (string, error) {
	return "preview", nil
}

// memAudit keeps the interlock's audit entries in memory.
type memAudit struct {
	clock *Clock
	mu    sync.Mutex
	all   []auditEntry
}

type auditEntry struct {
	at envelope.Entry
	el Duration
}

func (a *memAudit) Record(_ context.Context, e envelope.Entry) error {
	a.mu.Lock()
	a.all = append(a.all, auditEntry{at: e, el: Duration(a.clock.Elapsed())})
	a.mu.Unlock()
	return nil
}

func (a *memAudit) entries() []auditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]auditEntry(nil), a.all...)
}

// grantAll is the preview's Authorizer: its own token is granted every
// action and every catalog permission. The envelope still judges each
// action: authorisation is not what a preview predicts.
type grantAll struct{}

func (grantAll) Authorize(context.Context, string, envelope.Action) (envelope.Grant, error) {
	return envelope.Grant{SessionID: Token}, nil
}

func (grantAll) Authenticate(context.Context, string) (envelope.Grant, error) {
	return envelope.Grant{SessionID: Token}, nil
}

func (grantAll) AuthorizeTool(context.Context, string, catalog.Tool) (envelope.ToolGrant, error) {
	return envelope.ToolGrant{SessionID: Token, Permissions: []catalog.Permission{catalog.PermissionRead,
		catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}}, nil
}

var _ envelope.ToolAuthorizer = grantAll{}
