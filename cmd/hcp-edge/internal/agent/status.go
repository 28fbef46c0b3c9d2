package agent

import (
	"fmt"
	"math"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/clocksync"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/safestate"
	"hcp-edge/envelope"
)

// round1 rounds v to one decimal.
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// statusOf turns the monitor's status into the status reply: each heated
// zone's controller under the zone's name (furnace on a rig of one).
func statusOf(st envelope.MonitorStatus, env *envelope.Envelope) reply.Status {
	r := st.Readings
	out := reply.Status{At: time.Now(), Latched: st.Latched, LatchReason: st.LatchReason, Healthy: st.Healthy,
		Readings: map[string]string{}, Values: map[string]any{}, Relay: "unknown"}
	age := func(at time.Time) string {
		if at.IsZero() {
			return "never read"
		}
		return fmt.Sprintf("%v ago", time.Since(at).Round(time.Millisecond))
	}
	for _, z := range env.Spec().ZoneNames() { // every heated zone, by its name (furnace on a rig of one)
		if f, _ := env.ZoneReading(r, z); !f.At.IsZero() {
			out.Readings[z] = fmt.Sprintf("PV %.1f °C, setpoint %.1f °C, output %s, heater %s, alarms %#04x (%s)",
				f.ProcessValue.Celsius(), f.Setpoint.Celsius(), f.OutputPower, safestate.OnOff(f.HeaterEnabled), uint16(f.Alarms), age(f.At))
			out.Values[z+".pv_c"] = round1(f.ProcessValue.Celsius())
			out.Values[z+".setpoint_c"] = round1(f.Setpoint.Celsius())
			out.Values[z+".heater_enabled"] = f.HeaterEnabled
			out.Values[z+".output_pct"] = float64(f.OutputPower)
		}
	}
	if p := r.Pressure; !p.At.IsZero() {
		out.Readings["chamber.pressure"] = fmt.Sprintf("%.4g mbar, %s (%s)", p.Pressure.Millibar(), p.Status, age(p.At))
		out.Values["chamber.pressure_mbar"] = p.Pressure.Millibar()
	}
	for gas, fl := range r.Flows {
		out.Readings["flow."+gas] = fmt.Sprintf("%.2f sccm, setpoint %.2f sccm %v (%s)", fl.Flow.SCCM(), fl.Setpoint.SCCM(), fl.Flags, age(fl.At))
		out.Values["flow."+gas+".sccm"] = fl.Flow.SCCM()
		out.Values["flow."+gas+".setpoint_sccm"] = fl.Setpoint.SCCM()
	}
	for name, l := range r.Switches {
		out.Readings["switch."+name] = fmt.Sprintf("%s (%s)", safestate.OnOff(l.On), age(l.At))
		out.Values["switch."+name] = l.On
	}
	for name, l := range r.Inputs {
		out.Readings["input."+name] = fmt.Sprintf("%t (%s)", l.On, age(l.At))
		out.Values["input."+name] = l.On
	}
	if l, ok := r.Inputs[rigconfig.InputRelayFB]; ok && !l.At.IsZero() {
		out.Relay = safestate.Energised(l.On)
	} else if l, ok := r.Switches[rigconfig.SwitchRelay]; ok && !l.At.IsZero() {
		out.Relay = safestate.Energised(l.On)
	}
	for _, m := range st.Margins {
		out.Margins = append(out.Margins, reply.Margin{Channel: m.Channel, Value: m.Value, Min: m.Min, Max: m.Max, Unit: m.Unit,
			Margin: m.Headroom(), Applies: m.Applies, Context: m.Context})
	}
	for _, t := range st.Trips {
		out.Trips = append(out.Trips, reply.Trip{Trip: string(t.Trip), Procedure: string(t.Procedure), Channel: t.Channel, Reason: t.Reason, At: t.At})
	}
	out.Activity = env.Activity(r).String()
	if n := len(st.Trips); st.Latched && n > 0 {
		at := st.Trips[n-1].At
		out.TripAt = &at
	}
	return out
}

// clockOf is the clock line of the status reply (nil without a hold).
func clockOf(h *clocksync.Hold) *reply.Clock {
	if h == nil {
		return nil
	}
	r := h.Check()
	return &reply.Clock{Sync: r.State.String(), Synced: r.Known && r.Synced, SyncedOnce: r.SyncedOnce, Holding: r.Holding,
		HoldEnabled: r.HoldEnabled, MaxErrorMS: float64(r.MaxError) / float64(time.Millisecond)}
}
