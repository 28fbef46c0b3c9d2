package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/metrics"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/envelope"
	"hcp-edge/session/audit"
	"hcp-edge/session/executor"
	"hcp-edge/session/modelrouter"
)

// modelAnalyzer is the handler of the analysis tool raman.analyze
// (registerAnalysis): the model router built from the
// `models:` and `model_routing:` sections, its every event (each invocation and refusal with its
// session, fallbacks, circuit changes) in the audit log, and its tracker
// saved to <state_dir>/model-tracker.json after each analysis. The router
// reads spectra and advises; it is handed no instrument and no interlock.
type modelAnalyzer struct {
	r    *modelrouter.Router
	path string
	log  *slog.Logger
}

var _ executor.Analyzer = (*modelAnalyzer)(nil)

// newModelAnalyzer builds the router of f's registry over the tracker saved
// in the state directory. A tracker file that cannot be read stops the
// start: the day's spend must not be forgotten silently.
func newModelAnalyzer(f rigconfig.File, log *audit.Log, logger *slog.Logger) (*modelAnalyzer, error) {
	path := filepath.Join(f.Agent.StateDir, rigconfig.ModelTrackerFile)
	tr, err := modelrouter.LoadTracker(path, nil)
	if err != nil {
		return nil, fmt.Errorf("models: %w (remove the file to start the day's spend from zero)", err)
	}
	logger = logger.With("component", "modelrouter")
	r, err := modelrouter.New(f.ModelRegistry(), f.ModelRouting.Opts(modelrouter.Opts{Tracker: tr, Auditor: modelAuditor{log: log, logger: logger}, Logger: logger}))
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return &modelAnalyzer{r: r, path: path, log: logger}, nil
}

// Analyze routes one analysis and saves the tracker.
func (a *modelAnalyzer) Analyze(ctx context.Context, req modelrouter.Request) (modelrouter.Decision, error) {
	d, err := a.r.Analyze(ctx, req)
	if serr := a.r.Tracker().Save(a.path); serr != nil {
		a.log.Warn("model tracker not saved", "file", a.path, "err", serr)
	}
	return d, err
}

// registerAnalysis registers an as the handler of the compute tool
// raman.analyze on iv: the analyse phase reaches the router only through
// the tool pipeline (permission, rate limit, schemas, statistics).
func registerAnalysis(iv *envelope.Invoker, an executor.Analyzer) error {
	if err := executor.RegisterAnalysis(iv, an); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	return nil
}

// metrics is the router's state at a scrape.
func (a *modelAnalyzer) metrics() metrics.Models {
	return metrics.Models{Stats: a.r.Tracker().Stats(), SpentToday: a.r.Tracker().SpentToday(), Circuits: a.r.Circuits()}
}

// modelAuditor appends the router's events to the audit log, each under
// its session (a circuit change has none).
type modelAuditor struct {
	log    *audit.Log
	logger *slog.Logger
}

// Audit appends e (the router calls it inline: bounded to 5 s).
func (m modelAuditor) Audit(e modelrouter.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		m.logger.Error("model event not audited", "kind", e.Kind, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.log.Append(ctx, audit.Entry{At: e.At, SessionID: e.Task, Kind: audit.KindModel, Detail: string(b)}); err != nil {
		m.logger.Error("model event not audited", "kind", e.Kind, "session", e.Task, "err", err)
	}
}
