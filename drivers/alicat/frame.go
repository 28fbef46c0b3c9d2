package alicat

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hcp-edge/hcp-edge/device"
)

// psi is one pound-force per square inch in pascal.
const psi = 6894.757293168361

// knownFlags are the status codes the controller may append to a data frame.
var knownFlags = map[string]bool{"HLD": true, "MOV": true, "OVR": true}

// Frame is one parsed data frame.
type Frame struct {
	UnitID      byte
	Pressure    float64 // psia
	Temperature float64 // °C
	VolFlow     float64 // ccm
	MassFlow    float64 // sccm
	Setpoint    float64 // sccm
	// SetpointRes is the resolution the setpoint was printed with (0.01 for
	// "+025.00").
	SetpointRes float64
	Gas         string
	Flags       []string
}

// Held reports whether the frame carries HLD.
func (f Frame) Held() bool {
	for _, s := range f.Flags {
		if s == "HLD" {
			return true
		}
	}
	return false
}

// ParseFrame parses a data frame (without its CR) strictly: the unit id must be
// id, five numbers in the sign+digits+point+digits format, the gas name must be
// gas, and every status code must be known. Anything else is an error wrapping
// device.ErrFrame; a "<id> ?" reply is an error wrapping device.ErrRejected.
func ParseFrame(b []byte, id byte, gas string) (Frame, error) {
	s := string(b)
	if s == string(id)+" ?" {
		return Frame{}, fmt.Errorf("controller answered %q: %w", s, device.ErrRejected)
	}
	fields := strings.Split(s, " ")
	if len(fields) < 7 {
		return Frame{}, frameErr(s, "want at least 7 fields, got %d", len(fields))
	}
	if len(fields[0]) != 1 || fields[0][0] != id {
		return Frame{}, frameErr(s, "unit id %q, want %q", fields[0], string(id))
	}
	var nums [5]float64
	var res float64
	for i := range nums {
		v, r, err := parseNumber(fields[1+i])
		if err != nil {
			return Frame{}, frameErr(s, "field %d: %v", 2+i, err)
		}
		nums[i], res = v, r
	}
	if fields[6] != gas {
		return Frame{}, frameErr(s, "gas %q, want %q", fields[6], gas)
	}
	var flags []string
	seen := map[string]bool{}
	for _, f := range fields[7:] {
		if !knownFlags[f] {
			return Frame{}, frameErr(s, "unknown status code %q", f)
		}
		if seen[f] {
			return Frame{}, frameErr(s, "status code %q twice", f)
		}
		seen[f] = true
		flags = append(flags, f)
	}
	return Frame{
		UnitID:      id,
		Pressure:    nums[0],
		Temperature: nums[1],
		VolFlow:     nums[2],
		MassFlow:    nums[3],
		Setpoint:    nums[4],
		SetpointRes: res,
		Gas:         fields[6],
		Flags:       flags,
	}, nil
}

func frameErr(frame, format string, args ...any) error {
	return fmt.Errorf("data frame %q: %s: %w", truncate(frame), fmt.Sprintf(format, args...), device.ErrFrame)
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// parseNumber parses a sign, at least one digit, a point and at least one
// digit ("+014.70", "-000.12", "+1000.00"), and returns the value and the
// resolution of its last digit. Numbers narrower than seven characters are
// refused, as the controller pads them with zeros.
func parseNumber(f string) (v, res float64, err error) {
	if len(f) < 7 || len(f) > 16 {
		return 0, 0, fmt.Errorf("number %q: want 7 characters (up to 16)", f)
	}
	if f[0] != '+' && f[0] != '-' {
		return 0, 0, fmt.Errorf("number %q: no sign", f)
	}
	point := -1
	for i := 1; i < len(f); i++ {
		c := f[i]
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && point < 0:
			point = i
		default:
			return 0, 0, fmt.Errorf("number %q: bad character %q", f, c)
		}
	}
	if point < 2 || point == len(f)-1 {
		return 0, 0, fmt.Errorf("number %q: want digits on both sides of the point", f)
	}
	v, err = strconv.ParseFloat(f, 64)
	if err != nil || !device.Finite(v) {
		return 0, 0, fmt.Errorf("number %q: %v", f, err)
	}
	return v, math.Pow10(-(len(f) - 1 - point)), nil
}

// status converts a frame into a device.FlowStatus.
func (f Frame) status() device.FlowStatus {
	return device.FlowStatus{
		Gas:         f.Gas,
		Flow:        device.SCCM(f.MassFlow),
		Setpoint:    device.SCCM(f.Setpoint),
		Pressure:    device.Pressure(f.Pressure * psi),
		Temperature: device.Celsius(f.Temperature),
		Flags:       f.Flags,
	}
}
