package serialsim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MFCVariant is the firmware and configuration a simulated mass-flow
// controller emulates, written from Alicat's Serial Communications Primer
// and from the replies of real MC controllers in
// drivers/alicat/testdata/corpus.txt (each variant names the capture it
// follows; what no capture shows is marked constructed).
type MFCVariant string

// The variants. The default ("") is the simulator's historic controller:
// 10v05 firmware, single spaces, every number signed; it also answers
// ??D*, DCU and LSS as a 10v05 controller would.
const (
	// MFCDefault: "A +014.70 +025.00 +000.00 +000.00 +000.00 Ar".
	MFCDefault MFCVariant = ""
	// MFCPadded: an MC on 10v20 (corpus poll-mc-10v20-padded): the gas
	// column right-aligned to its width 6, VE with a build date.
	MFCPadded MFCVariant = "padded"
	// MFCPre6v: an MC on 5v12 (poll-mc-5v12-unsigned): flows with one
	// decimal, the setpoint unsigned, the gas right-aligned to 7, the legacy
	// ??D* dialect; no DCU, no LSS (10v05 commands).
	MFCPre6v MFCVariant = "pre6v"
	// MFCTotalizer: MFCPadded with the totalizer option: a totalized mass
	// (standard litres) between the setpoint and the gas (constructed,
	// after numat/alicat's reading of the column).
	MFCTotalizer MFCVariant = "totalizer"
	// MFCSLPM: an MCR-style unit on 8v17 (poll-mcr-8v17-slpm,
	// describe-mcr-8v17): mass flow and setpoint in SLPM, volumetric flow in
	// LPM, three decimals (a 10 SLPM unit's "-00.034"); the setpoint command
	// takes SLPM; no DCU, no LSS.
	MFCSLPM MFCVariant = "slpm"
	// MFCAnalogSetpoint: MFCPadded whose setpoint source is the analog
	// input (LSS A): S is not accepted; the reply shows the setpoint
	// unchanged (Alicat BC manual, "Setpoint Source").
	MFCAnalogSetpoint MFCVariant = "analog-setpoint"
	// MFCSavedSetpoint: MFCPadded in saved setpoint mode (LSS S): every
	// accepted setpoint is also written to non-volatile memory, counted by
	// MFC.NVMWrites and logged as a write of channel "setpoint_nvm".
	MFCSavedSetpoint MFCVariant = "saved-setpoint"
)

// MFCVariants lists the variants by name, the default first as "default".
func MFCVariants() []string {
	out := []string{"default"}
	for v := range mfcVariants {
		if v != MFCDefault {
			out = append(out, string(v))
		}
	}
	sort.Strings(out[1:])
	return out
}

// ParseMFCVariant parses a variant's name ("default" or "" is MFCDefault).
func ParseMFCVariant(s string) (MFCVariant, error) {
	if s == "default" {
		s = ""
	}
	if _, ok := mfcVariants[MFCVariant(s)]; !ok {
		return "", fmt.Errorf("serialsim: unknown mfc variant %q (want one of %s)", s, strings.Join(MFCVariants(), ", "))
	}
	return MFCVariant(s), nil
}

// mfcVariant is the variant of the controller of gas.
func (o Opts) mfcVariant(gas string) MFCVariant {
	if v, ok := o.MFCVariants[gas]; ok {
		return v
	}
	return o.MFCVariants[""]
}

// ParseMFCVariants parses a list of variants as rig-sim's --mfc-variant
// takes it: "padded" (every controller), "h2=slpm" (the controller of a
// gas, by its link name's gas or "mfc-h2"), or several joined by commas
// ("padded,h2s=analog-setpoint").
func ParseMFCVariants(s string) (map[string]MFCVariant, error) {
	out := map[string]MFCVariant{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, val, named := strings.Cut(strings.TrimSpace(part), "=")
		if !named {
			name, val = "", name
		}
		name = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "mfc-")
		v, err := ParseMFCVariant(strings.TrimSpace(val))
		if err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("serialsim: mfc variant for %q given twice", name)
		}
		out[name] = v
	}
	return out, nil
}

// mfcDialect is how a firmware answers ??D*.
type mfcDialect int

const (
	dialect10v    mfcDialect = iota // "<id> D02 002 Abs Press  s decimal  7/2 010 02 PSIA"
	dialect8v                       // the same shape, without COM and GTA
	dialectLegacy                   // 5v12: NAME TYPE MinVal MaxVal UNITS
)

// mfcModel is what a variant changes.
type mfcModel struct {
	version  string // VE's reply after "<id>"
	pad      int    // the gas column right-aligned to this width (0: not padded)
	flowDec  int    // decimals of the flow columns (volumetric, mass)
	unsigned bool   // the setpoint printed without a sign (pre-6v)
	total    bool   // a totalizer column
	slpm     bool   // mass flow and setpoint in SLPM, volumetric in LPM
	lss      string // LSS's answer: U, S, A; "" refuses LSS
	dcu      bool   // answers DCU
	dialect  mfcDialect
}

var mfcVariants = map[MFCVariant]mfcModel{
	MFCDefault:        {version: " 10v05.0-R24", flowDec: 2, lss: "U", dcu: true},
	MFCPadded:         {version: "   10v20.0-R24 Jan  9 2025,15:04:07", pad: 6, flowDec: 2, lss: "U", dcu: true},
	MFCPre6v:          {version: "   5v12.0-R22", pad: 7, flowDec: 1, unsigned: true, dialect: dialectLegacy},
	MFCTotalizer:      {version: "   10v20.0-R24 Jan  9 2025,15:04:07", pad: 6, flowDec: 2, total: true, lss: "U", dcu: true},
	MFCSLPM:           {version: "   8v17.0-R23 Nov 27 2019,15:28:45", pad: 6, flowDec: 3, slpm: true, dialect: dialect8v},
	MFCAnalogSetpoint: {version: "   10v20.0-R24 Jan  9 2025,15:04:07", pad: 6, flowDec: 2, lss: "A", dcu: true},
	MFCSavedSetpoint:  {version: "   10v20.0-R24 Jan  9 2025,15:04:07", pad: 6, flowDec: 2, lss: "S", dcu: true},
}

// flowUnits are the labels of the volumetric and mass-flow units.
func (v mfcModel) flowUnits() (vol, mass string, code int) {
	if v.slpm {
		return "LPM", "SLPM", 7
	}
	return "CCM", "SCCM", 12
}

// manufacturing is the ??M* answer, laid out as the captures
// manufacturing_info_mc (10v20), _v8 (8v17) and _v1_v7 (5v12) of
// github.com/GraysonBellamy/alicatlib; the model number states the
// controller's full scale as Alicat's do (MC-500SCCM-D, MCR-200SLPM-D);
// serial number and dates are ours.
func (v mfcModel) manufacturing(id byte, fullScaleSCCM float64) []string {
	u := string(id)
	model := fmt.Sprintf("MC-%sSCCM-D", strconv.FormatFloat(fullScaleSCCM, 'f', -1, 64))
	if v.slpm {
		model = fmt.Sprintf("MCR-%sSLPM-D", strconv.FormatFloat(fullScaleSCCM/1000, 'f', -1, 64))
	}
	sep := " "
	if v.dialect == dialectLegacy {
		sep = "  "
	}
	fw := strings.Fields(v.version)[0]
	return []string{
		u + "  M00 ALICAT SCIENTIFIC",
		u + "  M01 www.alicat.com",
		u + "  M02 Ph   520-290-6060",
		u + "  M03 info@alicat.com",
		u + "  M04 Model Number" + sep + model,
		u + "  M05 Serial Number 100001",
		u + "  M06 Date Manufactured 01/02/2026",
		u + "  M07 Date Calibrated   01/02/2026",
		u + "  M08 Calibrated By     HC",
		u + "  M09 Software Revision " + fw,
	}
}

// description is the ??D* answer, one line per element (without CR), laid
// out as the captures describe-mc-10v20, describe-mcr-8v17 and
// describe-mc-5v12-legacy are.
func (v mfcModel) description(id byte) []string {
	u := string(id)
	vol, mass, code := v.flowUnits()
	if v.dialect == dialectLegacy {
		out := []string{
			u + "  D00 NAME_______ TYPE_____ MinVal_  MaxVal_  UNITS__",
			u + "  D01 Unit ID     char         A         Z         na",
			u + "  D02 Pressure    signed    +000.00  +160.00     PSIA",
			u + "  D03 Temperature signed    -010.00  +050.00        C",
			u + fmt.Sprintf("  D04 Volumetric  signed    +0000.0  +0500.0  %7s", vol),
			u + fmt.Sprintf("  D05 Mass        signed    +0000.0  +0500.0  %7s", mass),
			u + fmt.Sprintf("  D06 SetPoint    signed    +0000.0  +0500.0  %7s", mass),
			u + "  D07 Gas         string        Air       D2       na",
			u + "  D08 Error       string         na      ADC       na",
		}
		for i, c := range []string{"LCK", "OVR", "POV", "TOV", "VOV", "MOV"} {
			out = append(out, fmt.Sprintf("%s  D%02d Status      string         na      %s       na", u, 9+i, c))
		}
		return out
	}
	row := func(n int, stat, name, typ, width, notes string) string {
		return strings.TrimRight(fmt.Sprintf("%s D%02d %s %-26s %-11s %5s %s", u, n, stat, name, typ, width, notes), " ")
	}
	out := []string{
		u + " D00 ID_ NAME______________________ TYPE_______ WIDTH NOTES___________________",
		row(1, "700", "Unit ID", "string", "1", ""),
		row(2, "002", "Abs Press", "s decimal", "7/2", "010 02 PSIA"),
		row(3, "003", "Flow Temp", "s decimal", "7/2", "002 02 `C"),
		row(4, "004", "Volu Flow", "s decimal", fmt.Sprintf("7/%d", v.flowDec), fmt.Sprintf("%03d 02 %s", code, vol)),
		row(5, "005", "Mass Flow", "s decimal", fmt.Sprintf("7/%d", v.flowDec), fmt.Sprintf("%03d 02 %s", code, mass)),
		row(6, "037", "Mass Flow Setpt", "s decimal", fmt.Sprintf("7/%d", v.flowDec), fmt.Sprintf("%03d 02 %s", code, mass)),
	}
	if v.total {
		// Constructed: no capture of a totalizer's row; the name is what
		// tells it (its statistic code here is ours).
		out = append(out, row(7, "038", "Tot Mass", "s decimal", "10/1", "004 02 SL"))
	}
	n := len(out)
	out = append(out, row(n, "703", "Gas", "string", "6", ""), row(n+1, "701", "*Error", "string", "3", "ADC"))
	codes := []string{"OPL", "POV", "P2O", "TOV", "VOV", "MOV", "TMF", "OVR", "COM", "HLD", "EXH", "GTA", "LCK"}
	if v.dialect == dialect8v {
		codes = []string{"OPL", "POV", "P2O", "TOV", "VOV", "MOV", "TMF", "OVR", "HLD", "EXH", "LCK"}
	}
	for i, c := range codes {
		out = append(out, row(n+2+i, "702", "*Status", "string", "3", c))
	}
	return out
}
