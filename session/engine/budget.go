package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"hcp-edge/session/budget"
	"hcp-edge/session/executor"
)

// CodeBudgetExceeded is the L4 error code of a session failed because it
// overran one of its resource budgets (an hcp-edge extension,
// docs/PROTOCOL-NOTES.md "Resource budgets").
const CodeBudgetExceeded executor.Code = budget.Code

// defaultBudgetEvery is how often a running session's usage is updated and
// checked when Config.BudgetEvery is zero (wall time).
const defaultBudgetEvery = 100 * time.Millisecond

// budgetRun is the resource monitor of one run of a session: its tracker
// and the goroutine that feeds and checks it.
type budgetRun struct {
	tr      *budget.Tracker
	base    int // actions before this run (a recovered session's)
	counted int // the counter's figure for the session when this run began
}

// limits are session l's budgets: its capability's policy, tightened by
// the task's constraints.budgets, and its max_duration.
func (e *Engine) limits(l *live) (budget.Limits, error) {
	var policy budget.Limits
	if b := l.capab.Budgets; b != nil {
		var err error
		if policy, err = budget.Spec(*b).Limits(); err != nil {
			return budget.Limits{}, fmt.Errorf("engine: capability %s budgets: %w", l.capab.Name, err)
		}
	}
	task, err := budget.ParseTask(l.meta.Submit)
	if err != nil {
		return budget.Limits{}, err
	}
	lim := policy.Tighter(task)
	lim.Wall = l.maxDur
	return lim, nil
}

// startBudget builds the tracker of l's run (from the budget state of the
// checkpoint it resumes from, if any) and starts the goroutine that feeds
// it the rig's readings and the actions counted for the session, and
// cancels ctx's run with the *budget.ExceededError of the first overrun
// budget. The returned function stops the goroutine, waits for it and
// takes a last reading: call it when the run's steps and cleanup are over.
// An error (budgets that do not parse: checked at submit, so a declaration
// changed since) starts nothing; the run must not start either.
func (e *Engine) startBudget(ctx context.Context, l *live) (func(), error) {
	l.mu.Lock()
	from, since, cancel := l.budgetFrom, l.runAt, l.cancel
	if since.IsZero() {
		since = l.meta.RunningSince // recovered: the wall clock's word
	}
	runMono, ran := l.runMono, !since.IsZero()
	l.mu.Unlock()
	lim, err := e.limits(l)
	if err != nil {
		return nil, err
	}
	opts := budget.Opts{Scale: e.cfg.TimeScale}
	if from == nil {
		opts.Start = since
		from = &budget.State{}
	}
	b := &budgetRun{tr: budget.NewTracker(lim, *from, opts), base: from.Usage.Actions}
	if e.cfg.Actions != nil {
		b.counted = e.cfg.Actions.Executed(l.id)
	}
	l.mu.Lock()
	l.budget = b
	l.mu.Unlock()
	every := e.cfg.BudgetEvery
	if every <= 0 {
		every = defaultBudgetEvery
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			e.observe(wctx, l, b, runMono, ran)
			if err := b.tr.Check(e.pc.Mono()); err != nil {
				var ex *budget.ExceededError
				errors.As(err, &ex)
				e.log.Warn("budget exceeded: aborting the run", "session", l.id, "budget", ex.Budget, "gas", ex.Gas,
					"used", ex.Used, "limit", ex.Limit, "unit", ex.Unit)
				cancel(ex)
				return
			}
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		stop()
		wg.Wait()
		e.observe(context.WithoutCancel(ctx), l, b, runMono, ran)
	}, nil
}

// observe feeds b the rig's readings, the actions counted for l and the
// process time since it started running (runMono: the process clock's
// Elapsed then, ran: it has a start; the readings' own timestamps and the monotonic clock judge
// every interval, so a step of the wall clock charges nothing). The readings are the whole rig's:
// they are charged to sessions of capabilities that involve physical
// resources only (the gate runs no two of those on shared equipment at
// once); a read-only session (rig-status) is charged its actions and time.
func (e *Engine) observe(ctx context.Context, l *live, b *budgetRun, runMono time.Duration, ran bool) {
	if l.capab.Safety.InvolvesPhysicalResources {
		b.tr.Observe(e.cfg.Rig.Readings(ctx))
	}
	if e.cfg.Actions != nil {
		b.tr.SetActions(b.base + e.cfg.Actions.Executed(l.id) - b.counted)
	}
	if ran {
		b.tr.SetWall(time.Duration(float64(e.pc.Elapsed()-runMono) * e.cfg.TimeScale))
	}
}

// budgetFailure is the failure of a run its budget monitor stopped (cause
// is the run context's cause): budget_exceeded, naming the budget, at the
// step where it stopped. nil when cause is not an overrun.
func budgetFailure(cause error, f *executor.Failure) *executor.Failure {
	var ex *budget.ExceededError
	if !errors.As(cause, &ex) {
		return nil
	}
	out := &executor.Failure{Code: CodeBudgetExceeded, Err: ex}
	if f != nil {
		out.Step, out.StepIndex, out.Phase = f.Step, f.StepIndex, f.Phase
	}
	return out
}

// Budgets returns the live usage of session id (a live session that has
// started running) against its budgets.
func (e *Engine) Budgets(id string) (budget.Report, bool) {
	l := e.get(id)
	if l == nil {
		return budget.Report{}, false
	}
	l.mu.Lock()
	b := l.budget
	l.mu.Unlock()
	if b == nil {
		return budget.Report{}, false
	}
	return b.tr.Report(e.pc.Mono()), true
}

// budgetReportLocked is l's budget report for an event (l.mu held); nil
// before its run started.
func (e *Engine) budgetReportLocked(l *live) *budget.Report {
	if l.budget == nil {
		return nil
	}
	r := l.budget.tr.Report(e.pc.Mono())
	return &r
}

// budgetStateLocked is l's budget state for a checkpoint (l.mu held).
func budgetStateLocked(l *live) *budget.State {
	if l.budget == nil {
		return nil
	}
	st := l.budget.tr.State()
	return &st
}

// withBudgets returns a progress event's data with its session's budget
// report added as "budgets" (data unchanged when it is not an object).
func withBudgets(data any, r *budget.Report) any {
	if r == nil {
		return data
	}
	b, err := json.Marshal(data)
	if err != nil {
		return data
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return data
	}
	rb, err := json.Marshal(r)
	if err != nil {
		return data
	}
	m["budgets"] = rb
	return m
}
