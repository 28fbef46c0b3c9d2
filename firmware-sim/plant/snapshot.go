package plant

import (
	"math"
	"time"
)

// FurnaceSnapshot is the furnace controller's state.
type FurnaceSnapshot struct {
	TemperatureC      float64  `json:"temperature_c"` // true work-zone temperature
	ElementC          float64  `json:"element_c"`
	PVC               *float64 `json:"pv_c"` // null while the thermocouple is open
	WorkingSetpointC  float64  `json:"working_setpoint_c"`
	SetpointC         float64  `json:"setpoint_c"`
	RampRateCPerMin   float64  `json:"ramp_rate_c_per_min"`
	HeaterEnable      bool     `json:"heater_enable"`
	HeaterActive      bool     `json:"heater_active"`
	OutputPct         float64  `json:"output_pct"`
	WatchdogTimeoutMs uint16   `json:"watchdog_timeout_ms"`
	WatchdogExpired   bool     `json:"watchdog_expired"`
	// WatchdogTrip is the last expiry's timing (zero before the first).
	WatchdogTrip     WatchdogTrip `json:"watchdog_trip"`
	AlarmLimitC      float64      `json:"alarm_limit_c"`
	InputRegisters   []uint16     `json:"input_registers"`
	HoldingRegisters []uint16     `json:"holding_registers"`
	// Eurotherm is the eurotherm3200 model's parameters (nil for the sim
	// model). With that model SetpointC is the selected setpoint, RampRate
	// the setpoint rate limit, HeaterEnable whether the controller's output is
	// not held off (auto, or manual with a manual output above 0, and an
	// output high limit above 0), HeaterActive whether the element gets power;
	// the registers of the sim map are then meaningless.
	Eurotherm *EurothermSnapshot `json:"eurotherm,omitempty"`
}

// MFCSnapshot is one mass-flow controller.
type MFCSnapshot struct {
	Gas           string  `json:"gas"`
	UnitID        string  `json:"unit_id"`
	FullScaleSCCM float64 `json:"full_scale_sccm"`
	SetpointSCCM  float64 `json:"setpoint_sccm"`
	FlowSCCM      float64 `json:"flow_sccm"`
	Hold          bool    `json:"hold"`
	StuckOpen     bool    `json:"stuck_open"`
	ValveOpen     bool    `json:"line_valve_open"`
	ToChamberSCCM float64 `json:"to_chamber_sccm"`
}

// Snapshot is every state variable of the plant at one instant.
type Snapshot struct {
	At             time.Time              `json:"at"`
	SimTimeS       float64                `json:"sim_time_s"`
	TimeScale      float64                `json:"time_scale"`
	Furnace        FurnaceSnapshot        `json:"furnace"`
	ChamberPa      float64                `json:"chamber_pa"`
	Pumping        bool                   `json:"pumping"`
	MFCs           map[string]MFCSnapshot `json:"mfcs"`
	Coils          map[string]bool        `json:"coils"`
	DiscreteInputs map[string]bool        `json:"discrete_inputs"`
	GPIO           map[string]bool        `json:"gpio"`
	// RelayWatchdog is the relay watchdog's state; nil (absent from the
	// JSON) when the plant runs without one.
	RelayWatchdog *RelayWatchdogState `json:"relay_watchdog,omitempty"`
	// Layers is the film's total thickness (Film.Layers); Material names what
	// grew ("", "MoS2", "WS2", or "MoS2+WS2" when both did), Film has the
	// layers per material, and Precursor is what the boat holds now.
	Layers           float64   `json:"layers"`
	Material         string    `json:"material"`
	Film             Film      `json:"film"`
	Precursor        Precursor `json:"precursor"`
	H2SExposureSCCMs float64   `json:"h2s_exposure_sccm_s"`
	// Truth is what the film is, for judging an analysis of its spectrum:
	// material, layers and coverage per layer count (Film.Truth).
	Truth           Truth   `json:"truth"`
	Faults          []Fault `json:"faults"`
	WriteLogLastSeq uint64  `json:"write_log_last_seq"`
	WriteLogDropped uint64  `json:"write_log_dropped"`
	// Rig is the rig simulated (rigs.go).
	Rig Rig `json:"rig"`
	// FoilMelted: the graphene rig's copper foil went above 1084.6 °C.
	FoilMelted bool `json:"foil_melted,omitempty"`
	// Zones are the heated zones of a rig with several (Plant.Zones), by
	// name; Furnace is then the growth zone. Solid is the two-zone rig's
	// sources. Both absent on a rig with one furnace.
	Zones map[string]ZoneSnapshot `json:"zones,omitempty"`
	Solid *SolidSnapshot          `json:"solid,omitempty"`
	// FurnaceModel and DIOModel are the maps units 1 and 2 serve.
	FurnaceModel FurnaceModel `json:"furnace_model"`
	DIOModel     DIOModel     `json:"dio_model"`
}

var diNames = [NumInputs]string{"door_closed", "exhaust_ok", "pump_running"}

// Snapshot returns every state variable (not the write log itself: see Writes).
func (p *Plant) Snapshot() Snapshot {
	last, dropped := p.log.stats()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checkWatchdogLocked()
	p.updatePinsLocked() // the relay watchdog acts before its state is read
	s := Snapshot{
		At:               p.now(),
		SimTimeS:         p.sim,
		TimeScale:        p.opts.TimeScale,
		ChamberPa:        p.pressurePa,
		Pumping:          p.pumpingLocked(),
		MFCs:             map[string]MFCSnapshot{},
		Coils:            map[string]bool{},
		DiscreteInputs:   map[string]bool{},
		GPIO:             map[string]bool{},
		Layers:           p.film.Layers(),
		Material:         p.film.Material(),
		Film:             p.film,
		Truth:            p.film.Truth(),
		Precursor:        p.precursor,
		H2SExposureSCCMs: p.h2sExposed,
		Faults:           p.faultsLocked(),
		WriteLogLastSeq:  last,
		WriteLogDropped:  dropped,
		Rig:              p.opts.Rig,
		FoilMelted:       p.graphene.melted,
		FurnaceModel:     p.opts.FurnaceModel,
		DIOModel:         p.opts.DIOModel,
	}
	f := &s.Furnace
	f.TemperatureC = p.tempC
	f.ElementC = p.elemC
	if !p.faultActiveLocked(FaultTCOpen, "") {
		pv := p.pvC
		f.PVC = &pv
	}
	f.WorkingSetpointC = p.wsp
	f.SetpointC = float64(p.setpoint) / 10
	f.RampRateCPerMin = float64(p.rampRate) / 10
	f.HeaterEnable = p.heaterOn
	f.HeaterActive = p.heaterPermittedLocked()
	f.OutputPct = p.outPct
	f.WatchdogTimeoutMs = p.wdTimeoutMs
	f.WatchdogExpired = p.wdExpired
	f.WatchdogTrip = p.wdTrip
	f.AlarmLimitC = float64(p.alarmLimit) / 10
	if p.opts.FurnaceModel == FurnaceEurotherm3200 {
		e := &p.euro
		f.Eurotherm = p.eurothermSnapshotLocked(&p.thermalZone)
		f.SetpointC = e.selectedSP()
		f.RampRateCPerMin = e.spRate
		f.HeaterEnable = (!e.manual || e.manOP > 0) && e.opHi > 0
		f.HeaterActive = p.relay && e.wrkOP > 0
	}
	for i := 0; i < NumInputRegs; i++ {
		f.InputRegisters = append(f.InputRegisters, p.inputRegLocked(i))
	}
	for i := 0; i < NumHoldingRegs; i++ {
		f.HoldingRegisters = append(f.HoldingRegisters, p.holdingRegLocked(i))
	}
	for i, k := range p.Gases() {
		m := p.mfcReadLocked(i)
		s.MFCs[k] = MFCSnapshot{
			Gas: m.Gas, UnitID: string(m.UnitID), FullScaleSCCM: m.FullScaleSCCM,
			SetpointSCCM: m.SetpointSCCM, FlowSCCM: round3(m.FlowSCCM), Hold: m.Hold, StuckOpen: m.StuckOpen,
			ValveOpen: p.valveOpenLocked(i), ToChamberSCCM: p.chamberInflowSCCMLocked(i),
		}
	}
	for i, n := range p.coilNames {
		s.Coils[n] = p.coils[i]
	}
	if p.opts.DIOModel == DIOADAM6052 {
		s.Coils["do7"] = p.adamDO7
	}
	for i, n := range diNames {
		s.DiscreteInputs[n] = p.discreteLocked(i)
	}
	for _, pin := range p.pins {
		s.GPIO[pin.name] = bool(pin.level)
	}
	p.zonesSnapshotLocked(&s)
	if w, ok := p.relayWatchdogStateLocked(); ok {
		s.RelayWatchdog = &w
	}
	return s
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
