// Package rigconfig turns the rig section of the agent's YAML configuration
// into concrete drivers. It is the one place that knows which instrument sits
// on which wire; everything above it sees device contracts only.
//
// # Caveats
//
// Build opens serial ports and Modbus buses lazily where the drivers allow it,
// but configures nothing on the hardware: it performs no write. Outputs such as
// the interlock relay are built by the interlock (issue 3), not here.
package rigconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/modbus"
	"github.com/hcp-edge/hcp-edge/drivers/serialline"
)

// File is the part of the agent's configuration file this package reads;
// other top-level sections are ignored here.
type File struct {
	Rig Rig `yaml:"rig"`
}

// Rig describes the instruments and the wires they are on.
type Rig struct {
	// SimDir, when set, is substituted for ${sim_dir} in every path below.
	SimDir      string         `yaml:"sim_dir"`
	ModbusBuses map[string]Bus `yaml:"modbus_buses"`
	Furnace     ModbusDevice   `yaml:"furnace"`
	DIO         ModbusDevice   `yaml:"dio"`
	MFCs        []MFC          `yaml:"mfcs"`
	Gauge       Serial         `yaml:"gauge"`
	Raman       Raman          `yaml:"raman"`
	GPIO        GPIO           `yaml:"gpio"`
}

// Bus is one Modbus line: a TCP gateway or an RS-485 line.
type Bus struct {
	Transport string        `yaml:"transport"` // tcp or rtu
	Address   string        `yaml:"address"`   // host:port, or the serial device
	Mode      string        `yaml:"mode"`      // rtu only, e.g. "19200 8E1"
	Timeout   time.Duration `yaml:"timeout"`
	Retries   *int          `yaml:"retries"`
}

// ModbusDevice is an instrument on a named bus.
type ModbusDevice struct {
	Bus  string `yaml:"bus"`
	Unit byte   `yaml:"unit"`
}

// Serial is an instrument on its own serial port.
type Serial struct {
	Name    string        `yaml:"name"`
	Port    string        `yaml:"port"`
	Mode    string        `yaml:"mode"` // e.g. "9600 8N1"
	Timeout time.Duration `yaml:"timeout"`
}

// MFC is one mass-flow controller.
type MFC struct {
	Serial    `yaml:",inline"`
	Gas       string `yaml:"gas"`
	UnitID    string `yaml:"unit_id"`
	FullScale string `yaml:"full_scale"` // e.g. "500 sccm"
}

// Raman is the spectrometer; TimeScale is the simulator's (1 on real hardware).
type Raman struct {
	Serial    `yaml:",inline"`
	TimeScale float64 `yaml:"time_scale"`
}

// GPIO says where the e-stop, leak and relay lines come from.
type GPIO struct {
	Source string `yaml:"source"` // "sim" (the simulator's control socket); "host" comes with the daemon
	Socket string `yaml:"socket"`
}

// Load reads a configuration file strictly: unknown keys are errors.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("rigconfig: %w", err)
	}
	f, err := Parse(bytes.NewReader(b))
	if err != nil {
		return File{}, fmt.Errorf("rigconfig: %s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a configuration strictly and expands ${sim_dir} and
// environment variables in paths.
func Parse(r io.Reader) (File, error) {
	var f File
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return File{}, err
	}
	f.Rig.expand()
	return f, f.Rig.Validate()
}

func (r *Rig) expand() {
	r.SimDir = os.ExpandEnv(r.SimDir)
	if d := os.Getenv("HCP_RIG_SIM_DIR"); d != "" {
		r.SimDir = d
	}
	x := func(s string) string {
		s = strings.ReplaceAll(s, "${sim_dir}", r.SimDir)
		return os.ExpandEnv(s)
	}
	for k, b := range r.ModbusBuses {
		b.Address = x(b.Address)
		r.ModbusBuses[k] = b
	}
	for i := range r.MFCs {
		r.MFCs[i].Port = x(r.MFCs[i].Port)
	}
	r.Gauge.Port = x(r.Gauge.Port)
	r.Raman.Port = x(r.Raman.Port)
	r.GPIO.Socket = x(r.GPIO.Socket)
}

// Validate checks references and values without touching hardware.
func (r Rig) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) { errs = append(errs, fmt.Errorf("rig.%s: "+format, append([]any{key}, a...)...)) }
	for name, b := range r.ModbusBuses {
		if b.Transport != modbus.TransportTCP && b.Transport != modbus.TransportRTU {
			bad("modbus_buses."+name+".transport", "%q is neither tcp nor rtu", b.Transport)
		}
		if b.Address == "" {
			bad("modbus_buses."+name+".address", "missing")
		}
		if b.Mode != "" {
			if _, err := serialline.ParseMode(b.Mode); err != nil {
				bad("modbus_buses."+name+".mode", "%v", err)
			}
		}
	}
	for key, d := range map[string]ModbusDevice{"furnace": r.Furnace, "dio": r.DIO} {
		if _, ok := r.ModbusBuses[d.Bus]; !ok {
			bad(key+".bus", "no modbus bus named %q", d.Bus)
		}
		if d.Unit == 0 || d.Unit > 247 {
			bad(key+".unit", "%d is not a Modbus unit id (1..247)", d.Unit)
		}
	}
	seen := map[string]bool{}
	for i, m := range r.MFCs {
		key := fmt.Sprintf("mfcs[%d]", i)
		if m.Name == "" || m.Port == "" || m.Gas == "" {
			bad(key, "name, port and gas are required")
		}
		if seen[strings.ToLower(m.Gas)] {
			bad(key+".gas", "%s configured twice", m.Gas)
		}
		seen[strings.ToLower(m.Gas)] = true
		if len(m.UnitID) != 1 || m.UnitID[0] < 'A' || m.UnitID[0] > 'Z' {
			bad(key+".unit_id", "%q is not one capital letter", m.UnitID)
		}
		if _, err := ParseFlow(m.FullScale); err != nil {
			bad(key+".full_scale", "%v", err)
		}
	}
	if r.Gauge.Port == "" {
		bad("gauge.port", "missing")
	}
	if r.Raman.Port == "" {
		bad("raman.port", "missing")
	}
	if r.GPIO.Source != "sim" {
		bad("gpio.source", "%q: only \"sim\" is supported so far", r.GPIO.Source)
	}
	return errors.Join(errs...)
}

// ParseFlow reads a flow written as "<value> <unit>", e.g. "500 sccm" or "0.5 slm".
func ParseFlow(s string) (device.Flow, error) {
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return 0, fmt.Errorf("%q: want \"<value> <unit>\", e.g. \"500 sccm\"", s)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || !device.Finite(v) || v <= 0 {
		return 0, fmt.Errorf("%q: not a positive number", s)
	}
	return device.FlowIn(v, fields[1])
}
