package modelrouter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// trackerFormat is the format of a saved tracker.
const trackerFormat = 1

// savedTracker is a Tracker on disk: the day's spend and every model's
// statistics with its latency window.
type savedTracker struct {
	Format int          `json:"format"`
	Day    string       `json:"day"`
	Today  float64      `json:"spent_today"`
	Models []savedModel `json:"models"`
}

type savedModel struct {
	Stats   ModelStats      `json:"stats"`
	Lat     []time.Duration `json:"latencies_ns"`
	Next    int             `json:"next"`
	SumLat  time.Duration   `json:"sum_latency_ns"`
	SumConf float64         `json:"sum_confidence"`
	ConfN   int             `json:"confidences"`
	Day     string          `json:"day"`
}

// Save writes the tracker to path (a file in the agent's state directory)
// atomically: a temporary file beside it, synced, then renamed over it. A
// restart that loads it (LoadTracker) keeps the day's spend, so the daily
// budget holds across restarts, and the statistics.
func (t *Tracker) Save(path string) error {
	t.mu.Lock()
	st := savedTracker{Format: trackerFormat, Day: t.day, Today: t.today, Models: make([]savedModel, 0, len(t.models))}
	for _, m := range t.models {
		s := m.s
		s.Outcomes = make(map[Outcome]int, len(m.s.Outcomes))
		for k, v := range m.s.Outcomes {
			s.Outcomes[k] = v
		}
		st.Models = append(st.Models, savedModel{Stats: s, Lat: append([]time.Duration(nil), m.lat...), Next: m.next,
			SumLat: m.sumLat, SumConf: m.sumConf, ConfN: m.confN, Day: m.day})
	}
	t.mu.Unlock()
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("modelrouter: save tracker: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("modelrouter: save tracker: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("modelrouter: save tracker %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("modelrouter: save tracker %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("modelrouter: save tracker %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("modelrouter: save tracker %s: %w", path, err)
	}
	return nil
}

// LoadTracker returns the tracker saved at path (Save), reading the clock
// now (nil: time.Now); an empty tracker when the file does not exist. A
// file that cannot be read or parsed is an error: the caller decides (the
// daemon refuses to start rather than forget the day's spend).
func LoadTracker(path string, now func() time.Time) (*Tracker, error) {
	t := NewTracker(now)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("modelrouter: load tracker: %w", err)
	}
	var st savedTracker
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("modelrouter: load tracker %s: %w", path, err)
	}
	if st.Format != trackerFormat {
		return nil, fmt.Errorf("modelrouter: load tracker %s: format %d, want %d", path, st.Format, trackerFormat)
	}
	t.day, t.today = st.Day, st.Today
	for _, m := range st.Models {
		if m.Stats.Model == "" || len(m.Lat) > latencyWindow || m.Next < 0 || m.ConfN < 0 || (len(m.Lat) > 0 && m.Next >= len(m.Lat)) {
			return nil, fmt.Errorf("modelrouter: load tracker %s: a model's record is malformed", path)
		}
		if m.Stats.Outcomes == nil {
			m.Stats.Outcomes = map[Outcome]int{}
		}
		t.models[m.Stats.Model] = &modelRec{s: m.Stats, lat: m.Lat, next: m.Next, sumLat: m.SumLat, sumConf: m.SumConf, confN: m.ConfN, day: m.Day}
	}
	return t, nil
}
