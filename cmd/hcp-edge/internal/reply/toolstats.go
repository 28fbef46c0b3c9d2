package reply

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"hcp-edge/envelope"
)

// ToolStatsFile is the file in the state directory where the daemon leaves
// the tool pipeline's statistics when it stops; `hcp-edge tools` reads it
// when no daemon answers.
const ToolStatsFile = "tool-stats.json"

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ToolsOf is the view of the Invoker's statistics.
func ToolsOf(stats []envelope.ToolStats) Tools {
	out := Tools{At: time.Now().UTC(), Tools: make([]Tool, 0, len(stats))}
	for _, s := range stats {
		v := Tool{Tool: s.Tool.Name, Version: s.Tool.Version, Calls: s.Calls, Succeeded: s.Succeeded,
			Refused: s.Refused, Failed: s.Failed, TowardSafe: s.TowardSafe,
			P50: ms(s.P50()), P99: ms(s.P99()), Max: ms(s.MaxLatency), Mean: ms(s.MeanLatency()),
			FreshWaits: s.FreshWaits, MaxFreshWait: ms(s.MaxFreshWait)}
		if len(s.RefusedBy) > 0 {
			v.RefusedBy = make(map[string]uint64, len(s.RefusedBy))
			for r, n := range s.RefusedBy {
				v.RefusedBy[string(r)] = n
			}
		}
		out.Tools = append(out.Tools, v)
	}
	return out
}

// WriteToolStats writes r to dir/ToolStatsFile, atomically.
func WriteToolStats(dir string, r Tools) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ToolStatsFile+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, ToolStatsFile))
}

// ReadToolStats reads the statistics a stopped daemon left in dir.
func ReadToolStats(dir string) (Tools, error) {
	var r Tools
	path := filepath.Join(dir, ToolStatsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	r.Source = path
	return r, nil
}
