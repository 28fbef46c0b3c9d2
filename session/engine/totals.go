package engine

import (
	"time"

	"hcp-edge/transport/wire"
)

// runTotals are a session's running totals for its execution_summary,
// kept in each checkpoint (ckptPayload.Totals) so that they span a
// restart: a recovered session adds what its new run does to those of the
// checkpoint it resumes from. The time between that checkpoint and the
// restart is not counted (the run goes on from the checkpoint, and what it
// does again is counted again).
type runTotals struct {
	// Steps is the number of recipe steps executed.
	Steps int `json:"steps"`
	// Checkpoints is the number of checkpoints created, this one included.
	Checkpoints int `json:"checkpoints"`
	// Run is how long the recipe ran (process time, nanoseconds).
	Run time.Duration `json:"run_ns"`
}

// runMark is where and when the current run of a live session started in
// this process: its totals are the prior ones (those of the checkpoint it
// resumed from; zero for a new session) plus what it did since.
type runMark struct {
	prior runTotals
	from  int       // the step it started at
	start time.Time // the executor clock's reading when it started
	begun bool
}

// markRunLocked records the start of l's run at step from (l.mu held).
func (e *Engine) markRunLocked(l *live, from int) {
	l.mark.from, l.mark.start, l.mark.begun = from, e.clock.Now(), true
}

// totalsLocked are l's totals now, the run having reached step (the step
// it would resume at; l.mu held).
func (e *Engine) totalsLocked(l *live, step int) runTotals {
	t := l.mark.prior
	t.Checkpoints += l.ckpts
	if l.mark.begun {
		t.Steps += max(step-l.mark.from, 0)
		t.Run += e.clock.Now().Sub(l.mark.start)
	}
	return t
}

// summary is the execution_summary of totals t and l's risk events
// (runErr: how the run ended) and warnings (l.mu held).
func (e *Engine) summaryLocked(l *live, t runTotals, runErr error) *wire.ExecutionSummary {
	return &wire.ExecutionSummary{Duration: isoDuration(t.Run), StepsExecuted: t.Steps, CheckpointsCreated: t.Checkpoints,
		RiskEvents: e.riskEventsLocked(l, runErr), Warnings: l.warnings}
}

// priorTotals are the totals of a recovered session's checkpoint p; a
// checkpoint written before they were kept counts its steps alone.
func priorTotals(p ckptPayload) runTotals {
	if p.Totals != nil {
		return *p.Totals
	}
	return runTotals{Steps: p.Step}
}
