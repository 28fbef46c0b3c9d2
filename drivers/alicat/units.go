package alicat

import (
	"fmt"
	"strings"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
)

// Units are the engineering units one controller prints its columns in, in
// the profile's vocabulary ("sccm", "slpm", "ccm", "lpm", "psia",
// "celsius"), one per profile column; an empty one is the profile's. They
// are a property of the unit, not of the model: an MC-500SCCM prints SCCM,
// an MCR-200SLPM prints SLPM, and DCU changes them (Serial Primer,
// "Engineering Units"). MFC.Verify reads them from the controller.
type Units struct {
	col []string
}

// of is column i's unit.
func (u Units) of(m *Model, i int) string {
	if i < len(u.col) && u.col[i] != "" {
		return u.col[i]
	}
	return m.p.Channels[i].Unit
}

// Of returns the unit of the profile's column named name ("" if none).
func (u Units) Of(m *Model, name string) string {
	for i, c := range m.p.Channels {
		if c.Name == name {
			return u.of(m, i)
		}
	}
	return ""
}

// volumetricPerSCCM is a volumetric unit's size in "ccm": the
// volumetric column's range, when a profile states it as a fraction of full
// scale, takes the full scale's number of sccm as ccm (at standard
// conditions).
func volumetricPerSCCM(unit string) (float64, bool) {
	switch unit {
	case "ccm":
		return 1, true
	case "lpm":
		return 0.001, true
	}
	return 0, false
}

// UnitFor converts the label a controller reports for a column of role
// (DCU's "SCCM", ??D*'s "`C") to the profile's vocabulary, or refuses a unit
// that cannot belong to the role: a mass flow (and its setpoint) only in
// standard units the driver converts (SCCM, SLPM; a volumetric CCM or LPM,
// or normal-condition NCCM/NLPM, would be read as another quantity), a
// volumetric flow in CCM or LPM, an absolute pressure in PSIA (a gauge
// pressure PSIG is not absolute), a temperature in °C.
func UnitFor(role profile.Role, label string) (string, error) {
	l := strings.ToUpper(strings.TrimSpace(label))
	switch role {
	case profile.RoleFlow, profile.RoleSetpoint:
		switch l {
		case "SCCM":
			return "sccm", nil
		case "SLPM", "SLM":
			return "slpm", nil
		}
		return "", fmt.Errorf("%q is not a mass-flow unit the driver converts (SCCM or SLPM)", label)
	case profile.RoleVolumetricFlow:
		switch l {
		case "CCM":
			return "ccm", nil
		case "LPM":
			return "lpm", nil
		}
		return "", fmt.Errorf("%q is not a volumetric-flow unit the driver knows (CCM or LPM)", label)
	case profile.RolePressure:
		if l == "PSIA" {
			return "psia", nil
		}
		return "", fmt.Errorf("%q is not an absolute pressure unit the driver knows (PSIA)", label)
	case profile.RoleTemperature:
		switch l {
		case "`C", "C", "°C", "DEGC":
			return "celsius", nil
		}
		return "", fmt.Errorf("%q is not a temperature unit the driver knows (°C)", label)
	}
	return "", fmt.Errorf("%q: role %s has no unit", label, role)
}

// flowUnitOK reports whether unit is one device.FlowIn converts.
func flowUnitOK(unit string) bool {
	_, err := device.FlowIn(1, unit)
	return err == nil
}

// setpointDecimals is how many decimals SetFlow sends in unit: two in sccm
// (0.01 sccm), three in slpm (1 sccm: a 500 sccm controller set in SLPM
// prints three decimals, as the MW-10SLPM capture in the corpus does).
func setpointDecimals(unit string) int {
	if unit == "slpm" {
		return 3
	}
	return 2
}
