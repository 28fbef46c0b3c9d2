package alicat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/serialline"
)

var _ device.Verifier = (*MFC)(nil)

// The family's read-only queries Verify sends (Alicat Serial Primer, Rev. 2:
// "Query Data Frame" 6v00, "Manufacturing info", "Engineering Units" 10v05,
// "Setpoint Source" 10v05). None changes a setting: each is the query form, without an
// argument.
const (
	cmdDescribe     = "??D*"
	cmdManufacturer = "??M*"
	cmdUnits        = "DCU"
	cmdSource       = "LSS"
	statMassFlow    = 5
	statSetpoint    = 37
	maxLines        = 64 // lines of a ??D* or ??M* answer
)

// Verify reads the controller's identity and the settings the driver depends
// on, and compares them with the profile; it only sends queries (VE, ??M*,
// ??D*, DCU <stat>, LSS), never a setting. The findings:
//
//   - firmware (VE): informative.
//   - model (??M*): informative; its full scale, where the model number
//     states one ("MC-500SCCM-D", "MCR-200SLPM-D"), must be at least the
//     configured full scale (the controller refuses setpoints above its
//     own, and fs_range checks would use the wrong scale).
//   - data frame columns (??D*): the columns after the unit id, in order,
//     must be the profile's (a totalizer column just before the gas is
//     allowed: the driver reads it).
//   - status codes (??D*): every code the controller lists must be named in
//     the profile's status_codes, an error code (statistic 701) as
//     sensor_fault.
//   - the unit of each column (??D*; for the mass flow and its setpoint DCU
//     on 10v05 and later): a flow in SCCM or SLPM, converted; a unit that
//     cannot belong to the column (a volumetric LPM on the mass flow, a
//     gauge pressure) is a mismatch. The units read become the ones ReadFlow
//     and SetFlow use (Units): an MCR reporting SLPM is read in SLPM, not
//     taken for sccm.
//   - setpoint source (LSS): an analog source is a mismatch (the controller
//     then ignores S silently).
//   - setpoint saving (LSS): saved mode (S) is a mismatch: it writes
//     non-volatile memory at every setpoint, which the manufacturer warns
//     against changing more often than every few minutes.
//
// Firmware before 10v05 has no LSS: the finding says so and is OK, as the
// setpoint readback of every SetFlow still catches a setpoint the controller
// ignores. err is non-nil only when the controller cannot be read at all.
func (m *MFC) Verify(ctx context.Context) ([]device.Finding, error) {
	find := func(setting, found, expected string, ok bool) device.Finding {
		return device.Finding{Instrument: m.opts.Name, Setting: setting, Found: found, Expected: expected, OK: ok}
	}
	fw, err := m.firmware(ctx)
	if err != nil {
		return nil, err
	}
	out := []device.Finding{find("firmware (VE)", fw.Raw, "any", true)}
	model, err := m.identity(ctx)
	switch {
	case errors.Is(err, device.ErrRejected):
		out = append(out, find("model (??M*)", "not reported (??M* refused)", "any", true))
	case err != nil:
		return out, err
	default:
		out = append(out, find("model (??M*)", model, "any", true))
		if fs, ok := ModelFullScale(model); ok {
			out = append(out, find("full scale (??M* model number)", fs.String(), fmt.Sprintf("at least the configured %v", m.opts.FullScale), fs >= m.opts.FullScale*(1-1e-9)))
		}
	}

	units := Units{col: make([]string, len(m.model.p.Channels))}
	desc, err := m.describe(ctx)
	switch {
	case errors.Is(err, device.ErrRejected):
		out = append(out, find("data frame columns (??D*)", "not reported (??D* refused)", m.expectedColumns(), false))
	case err != nil:
		return out, err
	default:
		out = append(out, m.checkColumns(desc, units, find)...)
	}
	if fw.AtLeast(10, 5) {
		for _, q := range []struct {
			stat int
			role profile.Role
		}{{statMassFlow, profile.RoleFlow}, {statSetpoint, profile.RoleSetpoint}} {
			f, err := m.engineeringUnit(ctx, q.stat, q.role, units)
			if err != nil && !errors.Is(err, device.ErrRejected) {
				return out, err
			}
			if err == nil {
				out = append(out, f)
			}
		}
	}
	src, err := m.setpointSource(ctx)
	switch {
	case errors.Is(err, device.ErrRejected):
		note := fmt.Sprintf("not reported (firmware %s refuses LSS; the readback of every setpoint catches one ignored)", fw.Raw)
		out = append(out, find("setpoint source (LSS)", note, "digital (serial)", true),
			find("setpoint saving (LSS)", note, "unsaved (U)", true))
	case err != nil:
		return out, err
	default:
		names := map[string]string{SourceAnalog: "analog input (A): S is ignored", SourceSavedDigital: "digital, saved (S)", SourceDigital: "digital, unsaved (U)"}
		out = append(out, find("setpoint source (LSS)", names[src], "digital (serial): LSS U", src != SourceAnalog))
		if src != SourceAnalog {
			out = append(out, find("setpoint saving (LSS)", names[src]+map[bool]string{true: ": every setpoint is written to non-volatile memory", false: ""}[src == SourceSavedDigital],
				"unsaved (U): the manual warns saved setpoints changed more often than every few minutes may damage the non-volatile memory", src == SourceDigital))
		}
	}
	for i, c := range m.model.p.Channels {
		if (c.Role == profile.RoleFlow || c.Role == profile.RoleSetpoint) && units.col[i] != "" && !flowUnitOK(units.col[i]) {
			units.col[i] = ""
		}
	}
	m.mu.Lock()
	m.units = units
	m.mu.Unlock()
	return out, nil
}

// expectedRoles renders the profile's columns as roles.
func (m *Model) expectedRoles() []string {
	out := make([]string, len(m.p.Channels))
	for i, c := range m.p.Channels {
		out[i] = string(c.Role)
	}
	return out
}

func (m *MFC) expectedColumns() string { return strings.Join(m.model.expectedRoles(), " ") }

// checkColumns compares a ??D* description with the profile, and fills
// units with the units it names.
func (m *MFC) checkColumns(d Description, units Units, find func(string, string, string, bool) device.Finding) []device.Finding {
	var out []device.Finding
	found := d.Roles()
	got := found
	if n := len(got); n >= 2 && got[n-2] == string(RoleTotalizer) && got[n-1] == string(profile.RoleGas) {
		got = append(slices.Clone(got[:n-2]), got[n-1])
	}
	want := m.model.expectedRoles()
	out = append(out, find("data frame columns (??D*)", strings.Join(found, " "), strings.Join(want, " ")+" (a totalizer before the gas allowed)", slices.Equal(got, want)))
	for i, c := range m.model.p.Channels {
		if c.Type == "text" {
			continue
		}
		var col *Column
		for j := range d.Columns {
			if d.Columns[j].Role == c.Role {
				col = &d.Columns[j]
			}
		}
		if col == nil || col.Unit == "" {
			continue
		}
		u, err := UnitFor(c.Role, col.Unit)
		setting := fmt.Sprintf("unit of %s (??D*)", c.Name)
		if err != nil {
			out = append(out, find(setting, col.Unit, "a unit of "+string(c.Role)+": "+err.Error(), false))
			continue
		}
		units.col[i] = u
		out = append(out, find(setting, col.Unit, "a unit of "+string(c.Role)+" (converted)", true))
	}
	var unknown, notFault []string
	for _, code := range append(slices.Clone(d.Errors), d.Statuses...) {
		if _, ok := m.model.p.StatusCodes[code]; !ok {
			unknown = append(unknown, code)
		}
	}
	for _, code := range d.Errors {
		if mn, ok := m.model.p.StatusCodes[code]; ok && mn != "sensor_fault" {
			notFault = append(notFault, code)
		}
	}
	codes := strings.Join(append(slices.Clone(d.Errors), d.Statuses...), " ")
	switch {
	case len(unknown) > 0:
		out = append(out, find("status codes (??D*)", codes, fmt.Sprintf("every code named in the profile's status_codes (%s missing)", strings.Join(unknown, " ")), false))
	case len(notFault) > 0:
		out = append(out, find("status codes (??D*)", codes, fmt.Sprintf("error codes %s named sensor_fault in the profile", strings.Join(notFault, " ")), false))
	default:
		out = append(out, find("status codes (??D*)", codes, "every code named in the profile's status_codes", true))
	}
	return out
}

// engineeringUnit asks DCU <stat> and records the unit of the column of role.
func (m *MFC) engineeringUnit(ctx context.Context, stat int, role profile.Role, units Units) (device.Finding, error) {
	var label string
	err := m.exchange(ctx, "engineering units", fmt.Sprintf("%s %d", cmdUnits, stat), func(reply []byte) error {
		var err error
		_, label, err = ParseEngineeringUnit(reply, m.opts.UnitID)
		return err
	})
	if err != nil {
		return device.Finding{}, err
	}
	i := m.model.role[role]
	f := device.Finding{Instrument: m.opts.Name, Setting: fmt.Sprintf("unit of %s (DCU %d)", m.model.p.Channels[i].Name, stat), Found: label}
	u, uerr := UnitFor(role, label)
	if uerr != nil {
		f.Expected = "a unit of " + string(role) + ": " + uerr.Error()
		return f, nil
	}
	units.col[i] = u
	f.Expected, f.OK = "a unit of "+string(role)+" (converted)", true
	return f, nil
}

// setpointSource asks LSS (the query: no argument).
func (m *MFC) setpointSource(ctx context.Context) (string, error) {
	var src string
	err := m.exchange(ctx, "setpoint source", cmdSource, func(reply []byte) error {
		var err error
		src, err = ParseSetpointSource(reply, m.opts.UnitID)
		return err
	})
	return src, err
}

// describe asks ??D* and parses its lines.
func (m *MFC) describe(ctx context.Context) (Description, error) {
	lines, err := m.lines(ctx, cmdDescribe)
	if err != nil {
		return Description{}, fmt.Errorf("%s: describe data frame: %w", m.opts.Name, err)
	}
	d, err := ParseDescription(lines, m.opts.UnitID)
	if err != nil {
		return d, fmt.Errorf("%s: describe data frame: %w", m.opts.Name, err)
	}
	if len(d.Columns) == 0 {
		// The header and no column: the answer paused longer than lines'
		// quiet time after its first line (a loaded host or a slow
		// adapter), not a unit without columns. Not an answer: asked
		// again by the caller (rigbuild.Verify repeats on ErrTimeout).
		return d, fmt.Errorf("%s: describe data frame: the answer ended after %d line(s), before any column: %w", m.opts.Name, len(lines), device.ErrTimeout)
	}
	return d, nil
}

// lines sends a query answered by several lines (??D*, ??M*) and reads
// them: the answer has no end marker, so it ends when the line has been
// quiet for a fifth of the exchange timeout (100 ms by default) after a
// line: the controller sends its lines back to back. A lone "<id> ?" ends
// it at once (ErrRejected from the parser).
func (m *MFC) lines(ctx context.Context, cmd string) ([][]byte, error) {
	var lines [][]byte
	quiet := m.opts.Timeout / 5
	err := m.line.Do(ctx, func(tx *serialline.Tx) error {
		wctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
		err := tx.Write(wctx, []byte(string(m.opts.UnitID)+cmd+"\r"))
		cancel()
		if err != nil {
			return err
		}
		for len(lines) < maxLines {
			d := m.opts.Timeout
			if len(lines) > 0 {
				d = quiet
			}
			lctx, cancel := context.WithTimeout(ctx, d)
			l, err := tx.ReadUntil(lctx, []byte("\r"))
			cancel()
			if err != nil {
				if len(lines) > 0 && ctx.Err() == nil && errors.Is(err, device.ErrTimeout) {
					return nil
				}
				return err
			}
			lines = append(lines, l)
			if f := strings.Fields(string(l)); len(f) == 2 && f[1] == "?" {
				return nil
			}
		}
		return nil
	})
	return lines, err
}

// identity asks ??M* and returns the model number, or "" with ErrRejected.
func (m *MFC) identity(ctx context.Context) (string, error) {
	lines, err := m.lines(ctx, cmdManufacturer)
	if err != nil {
		return "", fmt.Errorf("%s: manufacturing info: %w", m.opts.Name, err)
	}
	model, err := ParseModel(lines, m.opts.UnitID)
	if err != nil {
		return "", fmt.Errorf("%s: manufacturing info: %w", m.opts.Name, err)
	}
	return model, nil
}
