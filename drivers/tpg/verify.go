package tpg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"hcp-edge/device"
	"hcp-edge/drivers/serialline"
)

// Setting names of the findings Verify reports, as the manual names them.
const (
	SettingContinuous = "continuous output (COM)"
	SettingUnit       = "pressure unit (UNI)"
	SettingError      = "error status (ERR)"
)

// settingGauge names the finding of one gauge's type.
func settingGauge(channel string) string { return channel + " gauge type (TID)" }

// Verify reads, and never changes, what the profile depends on:
//
//   - continuous output (COM) off: before sending anything it listens
//     Opts.Listen for output the controller sends unasked; a controller in
//     continuous mode streams a measurement line every 100 ms or 1 s, which
//     would be taken for the replies of the mnemonic protocol. A line heard
//     is judged by a second window: another line there is continuous
//     output, a mismatch, and nothing else is asked (the line is not the
//     protocol's); silence makes the first a stale reply (to an agent
//     killed between a query and its answer), discarded and named in the
//     finding.
//   - the gauge type on each of the profile's gauges (TID), against the
//     profile's gauge_ids where it names them; a connector that reports no
//     gauge ("noSEn", "noid") under a gauge of the profile is a mismatch.
//   - the pressure unit (UNI): any unit of the profile is OK (readings are
//     converted from it); a code the profile does not name is a mismatch.
//   - the error status (ERR), where the profile names the command: a
//     controller error or missing hardware is a mismatch, a refused command
//     is informative. Reading the word clears it in the controller, as the
//     manual says; it changes no setting.
//
// err is non-nil only when the controller could not be read at all.
func (g *Gauge) Verify(ctx context.Context) ([]device.Finding, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	find := func(setting, found, expected string, ok bool) device.Finding {
		return device.Finding{Instrument: g.opts.Name, Setting: setting, Found: found, Expected: expected, OK: ok}
	}
	var fs []device.Finding

	line, err := g.listen(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: verify: %w", g.opts.Name, err)
	}
	found := "off"
	if line != nil {
		// One line may be the reply to a process that has gone (an agent
		// killed between a query and its answer): continuous output
		// repeats within the next window, a stale reply does not.
		again, err := g.listen(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: verify: %w", g.opts.Name, err)
		}
		if again != nil {
			return append(fs, find(SettingContinuous, fmt.Sprintf("on (sends %q unasked)", truncate(again)),
				"off: the controller answers only what it is asked (front panel: switch continuous output off)", false)), nil
		}
		found = fmt.Sprintf("off (one stale line %q discarded, none after it)", truncate(line))
	}
	fs = append(fs, find(SettingContinuous, found, "off", true))

	if cmd := g.model.p.Commands["ident"]; cmd != "" {
		data, err := g.query(ctx, cmd)
		if err != nil {
			return nil, fmt.Errorf("%s: verify: ident: %w", g.opts.Name, err)
		}
		ids, err := ParseIdent(data)
		if err != nil {
			return nil, fmt.Errorf("%s: verify: ident: %w", g.opts.Name, err)
		}
		fs = append(fs, g.gaugeFindings(ids, find)...)
	}

	data, err := g.query(ctx, g.model.p.Commands["unit"])
	if err != nil {
		return nil, fmt.Errorf("%s: verify: unit: %w", g.opts.Name, err)
	}
	units := "one of the profile's (" + g.model.unitList() + "): readings are converted"
	switch u, err := g.model.ParseUnit(data); {
	case err == nil:
		fs = append(fs, find(SettingUnit, fmt.Sprintf("%s (%c)", g.model.UnitName(u), u), units, true))
		g.unit, g.unitKnown = u, true
	case errors.Is(err, device.ErrMismatch):
		fs = append(fs, find(SettingUnit, fmt.Sprintf("code %s, not in the profile", data), units, false))
		g.unitKnown = false
	default:
		return nil, fmt.Errorf("%s: verify: unit: %w", g.opts.Name, err)
	}

	if cmd := g.model.errCommand(); cmd != "" {
		data, err := g.query(ctx, cmd)
		if err != nil {
			return nil, fmt.Errorf("%s: verify: error status: %w", g.opts.Name, err)
		}
		w, err := ParseErrorWord(data)
		if err != nil {
			return nil, fmt.Errorf("%s: verify: error status: %w", g.opts.Name, err)
		}
		fs = append(fs, find(SettingError, fmt.Sprintf("%s (%s)", w, w), "no controller error, no missing hardware", !w.Fault()))
	}
	return fs, nil
}

// gaugeFindings compares each of the profile's gauges with its TID field.
func (g *Gauge) gaugeFindings(ids []string, find func(setting, found, expected string, ok bool) device.Finding) []device.Finding {
	var fs []device.Finding
	for _, c := range g.model.p.Channels {
		i := gaugeIndex(c.Command)
		want := ""
		if i >= 0 && i < len(g.model.p.GaugeIDs) {
			want = g.model.p.GaugeIDs[i]
		}
		expected := "a gauge (the profile names no type)"
		if want != "" {
			expected = want
		}
		if i < 0 || i >= len(ids) {
			fs = append(fs, find(settingGauge(c.Name), fmt.Sprintf("no field for %s in TID %q", c.Command, strings.Join(ids, ",")), expected, false))
			continue
		}
		got := ids[i]
		ok := !NoGauge(got) && (want == "" || got == want)
		fs = append(fs, find(settingGauge(c.Name), got, expected, ok))
	}
	return fs
}

// gaugeIndex is the TID field of a gauge's mnemonic (PR1: 0, PR2: 1), or
// -1 when the mnemonic names no gauge number.
func gaugeIndex(mnemonic string) int {
	if len(mnemonic) < 1 {
		return -1
	}
	d := mnemonic[len(mnemonic)-1]
	if d < '1' || d > '9' {
		return -1
	}
	return int(d - '1')
}

// listen waits Opts.Listen without sending anything and returns the first
// line the controller sent unasked, or nil when it stayed silent.
func (g *Gauge) listen(ctx context.Context) ([]byte, error) {
	lctx, cancel := context.WithTimeout(ctx, g.opts.Listen)
	defer cancel()
	var got []byte
	err := g.line.Do(lctx, func(tx *serialline.Tx) error {
		b, err := tx.ReadUntil(lctx, []byte("\r\n"))
		if err == nil {
			got = b
			if len(got) == 0 {
				got = []byte("\r\n")
			}
		}
		return err
	})
	switch {
	case got != nil:
		return got, nil
	case errors.Is(err, device.ErrTimeout) && ctx.Err() == nil:
		return nil, nil // silence: the controller speaks only when asked
	}
	return nil, err
}

// errCommand is the profile's error status command (ERR), or "".
func (m *Model) errCommand() string { return m.p.Commands["error"] }
