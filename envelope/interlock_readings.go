package envelope

import (
	"context"
	"errors"
	"sync"

	"hcp-edge/device"
)

// snapshot reads every instrument concurrently, each with ReadTimeout. A
// failed read leaves its part zero, hence stale: rules that need it refuse.
func (il *Interlock) snapshot(ctx context.Context) Readings {
	r := Readings{Flows: map[string]device.FlowStatus{}, Switches: map[string]Level{}, Inputs: map[string]Level{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	read := func(name string, f func(ctx context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, il.opts.ReadTimeout)
			defer cancel()
			if err := f(rctx); err != nil {
				il.log.Debug("snapshot read failed", "instrument", name, "err", err)
			}
		}()
	}
	for i := range il.env.zones {
		read(il.zoneInstrument(i), func(ctx context.Context) error {
			st, err := furnaceStatus(ctx, il.controller(i))
			if err == nil {
				mu.Lock()
				if i == 0 {
					r.Furnace = st
				} else {
					if r.Zones == nil {
						r.Zones = map[string]device.FurnaceStatus{}
					}
					r.Zones[il.env.zones[i].name] = st
				}
				mu.Unlock()
			}
			return err
		})
	}
	read("gauge", func(ctx context.Context) error {
		p, err := il.rig.Gauge.ReadPressure(ctx)
		if err == nil || errors.Is(err, device.ErrSensor) {
			mu.Lock()
			r.Pressure = p // a sensor status other than ok/under/over makes Check refuse
			mu.Unlock()
		}
		return err
	})
	for gas, fc := range il.rig.Flows {
		read("flow."+gas, func(ctx context.Context) error {
			st, err := fc.ReadFlow(ctx)
			if err == nil {
				mu.Lock()
				r.Flows[gas] = st
				mu.Unlock()
			}
			return err
		})
	}
	for name, sw := range il.rig.Switches {
		read("switch."+name, func(ctx context.Context) error {
			at := il.opts.Clock() // the value is no older than the read's start
			on, err := sw.State(ctx)
			if err == nil {
				mu.Lock()
				r.Switches[name] = Level{On: on, At: at}
				mu.Unlock()
			}
			return err
		})
	}
	for name, in := range il.rig.Inputs {
		read("input."+name, func(ctx context.Context) error {
			at := il.opts.Clock() // the value is no older than the read's start
			on, err := in.Read(ctx)
			if err == nil {
				mu.Lock()
				r.Inputs[name] = Level{On: on, At: at}
				mu.Unlock()
			}
			return err
		})
	}
	wg.Wait()
	r.At = il.opts.Clock()
	return r
}

// poll takes a snapshot and feeds it to the envelope's history.
func (il *Interlock) poll(ctx context.Context) Readings {
	r := il.snapshot(ctx)
	il.mu.Lock()
	il.env.Observe(il.state, r)
	observe := il.observe
	il.mu.Unlock()
	if observe != nil {
		observe(r)
	}
	return r
}
