package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/retention"
)

// startRetention starts the pruner of closed sessions (the retention
// section; session/retention), owned by the daemon: stop closes it before
// the engine. It refuses a retention shorter than the longest max_duration
// of the capabilities the agent offers (recipes included). The pruner ages
// the stored close stamps with the clock's Floor: a step of the wall clock
// forward (a Pi's NTP sync) makes no session older, so none is pruned
// early.
func (d *daemon) startRetention(ctx context.Context) error {
	r := d.f.Retention
	longest, which := rigconfig.Longest(d.reg.All())
	if errs := r.CheckRetention(longest, which); len(errs) > 0 {
		return fmt.Errorf("retention: %w", errors.Join(errs...))
	}
	pol, err := r.Policy()
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	p, err := retention.New(d.st, retention.Opts{
		Policy:       pol,
		ArtifactsDir: filepath.Join(d.f.Agent.StateDir, rigconfig.ArtifactsDir),
		ResultsDir:   filepath.Join(d.f.Agent.StateDir, rigconfig.ResultsDir),
		Clock:        d.clock.Floor,
		Every:        r.PruneEvery(),
		Logger:       d.log.With("component", "retention"),
		// The audit entries older than the longest retention, archived.
		AuditArchiveDir: filepath.Join(d.f.Agent.StateDir, rigconfig.AuditArchiveDir),
	})
	if err != nil {
		return err
	}
	if err := p.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	d.prune = p
	return nil
}

// stateUsage is the state_usage operation: what `hcp-edge state usage`
// prints, measured in the daemon that holds the file.
func (s *sessions) stateUsage(ctx context.Context) (retention.Usage, error) {
	return retention.Measure(ctx, s.st, filepath.Join(s.stateDir, rigconfig.ArtifactsDir), filepath.Join(s.stateDir, rigconfig.ResultsDir))
}
