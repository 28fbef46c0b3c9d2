package agent

import (
	"log/slog"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/envelope"
)

// saveToolStats writes the statistics to dir/tool-stats.json (through a
// temporary file and a rename, so a reader never sees half a file). A
// failure is logged: the statistics are a convenience, not state.
func saveToolStats(dir string, stats []envelope.ToolStats, log *slog.Logger) {
	if err := reply.WriteToolStats(dir, reply.ToolsOf(stats)); err != nil {
		log.Warn("tool statistics not saved", "dir", dir, "err", err)
	}
}
