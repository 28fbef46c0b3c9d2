package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/atrest"
	"hcp-edge/session/lifecycle"
)

// LogRow is one row of a growth log: the output schema's growth_log item
// and one line of the growth log CSV.
type LogRow struct {
	Elapsed      float64            `json:"elapsed_seconds"` // process seconds since the run started
	Stage        string             `json:"stage"`
	TemperatureC *float64           `json:"temperature_c,omitempty"`
	SetpointC    *float64           `json:"setpoint_c,omitempty"` // the furnace's target setpoint
	PressurePa   *float64           `json:"pressure_pa,omitempty"`
	Flows        map[string]float64 `json:"flows_sccm,omitempty"`
	// Zones is every heated zone's controller on a rig of several, by
	// zone name (none on a rig of one: its zone is TemperatureC).
	Zones map[string]ZoneLog `json:"zones,omitempty"`
}

// ZoneLog is one heated zone's controller in a growth-log row: its
// temperature (none on a sensor fault) and its target setpoint.
type ZoneLog struct {
	TemperatureC *float64 `json:"temperature_c,omitempty"`
	SetpointC    *float64 `json:"setpoint_c,omitempty"`
}

// zoneLog is f as a growth log reads it: nothing of a controller never read.
func zoneLog(f device.FurnaceStatus) (z ZoneLog) {
	if !f.At.IsZero() && f.Alarms&device.AlarmSensorBreak == 0 && device.Finite(float64(f.ProcessValue)) {
		v := round3(f.ProcessValue.Celsius())
		z.TemperatureC = &v
	}
	if !f.At.IsZero() && device.Finite(float64(f.Setpoint)) {
		v := round3(f.Setpoint.Celsius())
		z.SetpointC = &v
	}
	return z
}

// proc is the machinery every recipe shares: the growth log, actions with
// their errors named, waits and holds on the process clock.
type proc struct {
	env     *Env
	t0      time.Time // process time of elapsed 0
	started bool
	rows    []LogRow
	lastRow time.Time
	warns   []string
	logged  int // rows already stored in a checkpoint (journaled recipes)
	// onRead, when set, sees every snapshot read takes (a leak check
	// collects its pressure samples for the plot through it).
	onRead func(stage string, r envelope.Readings)
	// zone is the heated zone whose controller the log's temperature and
	// setpoint read: the zone of the last ramp, hold or cool ("": the
	// rig's first, Readings.Furnace).
	zone string
}

func (p *proc) journalMark() *int { return &p.logged }

// journalOf encodes state (a recipe's plan without its rows) and the rows
// from index from on.
func (p *proc) journalOf(state any, from int) ([]byte, json.RawMessage, int, error) {
	st, err := json.Marshal(state)
	if err != nil {
		return nil, nil, 0, err
	}
	from = min(max(from, 0), len(p.rows))
	rows, err := json.Marshal(p.rows[from:])
	if err != nil {
		return nil, nil, 0, err
	}
	return st, rows, len(p.rows), nil
}

func (p *proc) begin(env *Env) {
	p.env = env
	if !p.started {
		off := 0.0
		if n := len(p.rows); n > 0 {
			off = p.rows[n-1].Elapsed
		}
		p.t0 = env.Clock.Now().Add(-time.Duration(off * float64(time.Second)))
		p.started = true
	}
}

func (p *proc) elapsed() float64 {
	return math.Max(0, p.env.Clock.Now().Sub(p.t0).Seconds())
}

// row appends a growth-log row from r.
func (p *proc) row(stage string, r envelope.Readings) LogRow {
	lr := LogRow{Elapsed: round3(p.elapsed()), Stage: stage}
	f := r.Furnace
	if p.zone != "" {
		f, _ = p.env.Rig.Envelope().ZoneReading(r, p.zone)
	}
	z := zoneLog(f)
	lr.TemperatureC, lr.SetpointC = z.TemperatureC, z.SetpointC
	if len(r.Zones) > 0 { // a rig of several zones: every zone's
		envl := p.env.Rig.Envelope()
		lr.Zones = map[string]ZoneLog{}
		for _, zn := range envl.Spec().ZoneNames() {
			st, _ := envl.ZoneReading(r, zn)
			lr.Zones[zn] = zoneLog(st)
		}
	}
	if pr := r.Pressure; !pr.At.IsZero() && device.Finite(float64(pr.Pressure)) && pr.Pressure >= 0 &&
		(pr.Status == device.GaugeOK || pr.Status == device.GaugeUnderrange || pr.Status == device.GaugeOverrange) {
		v := round3(pr.Pressure.Pascal())
		lr.PressurePa = &v
	}
	for gas, fs := range r.Flows {
		if fs.At.IsZero() || !device.Finite(float64(fs.Flow)) {
			continue
		}
		if lr.Flows == nil {
			lr.Flows = map[string]float64{}
		}
		lr.Flows[gas] = round3(math.Max(0, fs.Flow.SCCM()))
	}
	p.rows = append(p.rows, lr)
	if len(p.rows) > MaxLogRows {
		p.rows = decimate(p.rows)
	}
	p.lastRow = p.env.Clock.Now()
	return lr
}

// MaxLogRows bounds the growth log a recipe keeps (and so its checkpoints and
// its outputs): one row every LogEvery (30 s) over a 72 h run would be 8,640
// rows, rewritten into every checkpoint. When the log grows past the bound,
// decimate halves its resolution.
const MaxLogRows = 1024

// decimate keeps every other row, and always the first and the newest, so the
// log still spans the whole run at half the resolution.
func decimate(rows []LogRow) []LogRow {
	out := rows[:0:0]
	for i, r := range rows {
		if i%2 == 0 || i == len(rows)-1 {
			out = append(out, r)
		}
	}
	return out
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// read takes a snapshot, logs a row when LogEvery has passed (or force),
// and fails on a latched interlock.
func (p *proc) read(ctx context.Context, stage string, force bool) (envelope.Readings, error) {
	r := p.env.Rig.Readings(ctx)
	if p.onRead != nil {
		p.onRead(stage, r)
	}
	if force || p.lastRow.IsZero() || p.env.Clock.Now().Sub(p.lastRow) >= p.env.LogEvery {
		p.row(stage, r)
	}
	if latched, why := p.env.Rig.Latched(); latched {
		return r, fmt.Errorf("%w: %s", ErrLatched, why)
	}
	return r, nil
}

// freshWaitLog is the message of the log event of an action that waited
// for a fresh reading.
const freshWaitLog = "the action waited for a fresh reading (late, not stale)"

// timeoutTries bounds how often an action whose write or read-back the
// instrument did not answer in time is tried (see apply).
const timeoutTries = 3

// apply runs one action through the interlock. A rate-of-change refusal is
// retried after the time the limit needs (process clock, at most 5 tries):
// the envelope counts rates on its own clock. A refusal for a stale reading
// is final: the interlock has already waited, within the bound of the
// instruments it lacked (their poll period × 3 + its read timeout), for a
// fresh snapshot, and never acts on a stale one (late is not stale,
// envelope/freshwait.go); an action that waited is logged with how long. A
// write or read-back that the instrument did not answer in time
// (device.ErrTimeout) is tried again, at most timeoutTries times in all:
// every action but an acquisition sets a value (a setpoint, a flow, a
// switch), so writing it again is harmless, and each try passes the whole
// interlock anew (a fresh snapshot, the envelope's check, the audit).
func (p *proc) apply(ctx context.Context, a envelope.Action) (envelope.Result, error) {
	timeouts := 0
	for try := 0; ; try++ {
		res, err := p.env.Rig.Apply(ctx, p.env.Token, a)
		if err == nil && res.Waited > 0 {
			p.log(ctx, "warn", freshWaitLog,
				map[string]any{"action": a.String(), "waited_ms": res.Waited.Milliseconds()})
		}
		if err != nil && errors.Is(err, device.ErrTimeout) && a.Kind != envelope.ActAcquire && timeouts+1 < timeoutTries && ctx.Err() == nil {
			timeouts++
			p.log(ctx, "warn", "the instrument did not answer the write in time; trying again",
				map[string]any{"action": a.String(), "try": timeouts + 1, "err": err.Error()})
			continue
		}
		var v *envelope.Violation
		if err != nil && errors.As(err, &v) && v.Rule == envelope.RuleRate && try < 5 && v.Limit > 0 {
			wait := time.Duration(math.Abs(v.Value-v.Limit)/v.Limit*float64(time.Minute)) + 10*time.Second
			p.log(ctx, "warn", "rate of change refused; retrying", map[string]any{"action": a.String(), "wait_s": wait.Seconds()})
			if err := p.env.Clock.Sleep(ctx, wait); err != nil {
				return res, err
			}
			continue
		}
		if err != nil {
			return res, fmt.Errorf("executor: %v: %w", a, err)
		}
		return res, nil
	}
}

func (p *proc) applyAll(ctx context.Context, as ...envelope.Action) error {
	for _, a := range as {
		if _, err := p.apply(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

func (p *proc) emit(ctx context.Context, t lifecycle.EventType, data any) error {
	if err := p.env.Sink.Emit(ctx, t, data); err != nil {
		return fmt.Errorf("%w: %w", errSink, err)
	}
	return nil
}

func (p *proc) log(ctx context.Context, level, msg string, details map[string]any) {
	p.env.Logger.Info(msg, "level", level, "details", details)
	_ = p.env.Sink.Emit(ctx, lifecycle.EventLog, Log{Level: level, Message: msg, Details: details})
}

func (p *proc) warn(ctx context.Context, code, msg string, details map[string]any) {
	p.warns = append(p.warns, msg)
	_ = p.env.Sink.Emit(ctx, lifecycle.EventWarning, Warning{Code: code, Message: msg, Details: details})
}

// warnAudited is warn for a finding the session's audit log also holds:
// the engine records it with the event (Warning.Audit).
func (p *proc) warnAudited(ctx context.Context, code, msg string, details map[string]any) {
	p.warns = append(p.warns, msg)
	_ = p.env.Sink.Emit(ctx, lifecycle.EventWarning, Warning{Code: code, Message: msg, Details: details, Audit: true})
}

// waitUntil polls the readings every PollEvery until cond holds, or fails
// with ErrCondition after timeout (process time). cond may fail the wait.
func (p *proc) waitUntil(ctx context.Context, stage, what string, timeout time.Duration,
	cond func(envelope.Readings) (bool, error)) (envelope.Readings, error) {
	deadline := p.env.Clock.Now().Add(timeout)
	for {
		r, err := p.read(ctx, stage, false)
		if err != nil {
			return r, err
		}
		ok, err := cond(r)
		if err != nil {
			return r, err
		}
		if ok {
			p.row(stage, r)
			return r, nil
		}
		if p.env.Clock.Now().After(deadline) {
			p.row(stage, r)
			return r, fmt.Errorf("%w: %s within %v", ErrCondition, what, timeout)
		}
		if err := p.env.Clock.Sleep(ctx, p.env.PollEvery); err != nil {
			return r, err
		}
	}
}

// freshness judges whether a reading may be used: its own timestamp is
// after since (the instant, on the instruments' clock, of the action it
// judges) and it is no older than the envelope's MaxReadingAge at the time
// of the readings. A wait whose looks find no fresh reading for
// MaxReadingAge on end (the instruments' clock, from the first such look)
// fails with a *ReadingError naming it.
type freshness struct {
	reading string                            // names the reading in errors
	since   time.Time                         // the action it judges (instruments' clock)
	at      func(envelope.Readings) time.Time // the reading's own timestamp
	maxAge  time.Duration
	stale   time.Time // the first look of the current run of looks without a fresh reading
}

func (p *proc) fresh(reading string, since time.Time, at func(envelope.Readings) time.Time) *freshness {
	return &freshness{reading: reading, since: since, at: at, maxAge: p.env.Rig.Envelope().MaxReadingAge()}
}

// judge reports whether r holds a fresh reading, or fails once none came
// for too long.
func (f *freshness) judge(r envelope.Readings) (bool, error) {
	a := f.at(r)
	if !a.IsZero() && a.After(f.since) && r.At.Sub(a) <= f.maxAge {
		f.stale = time.Time{}
		return true, nil
	}
	if f.stale.IsZero() {
		f.stale = r.At
		if f.since.After(f.stale) {
			f.stale = f.since
		}
	}
	if r.At.Sub(f.stale) > f.maxAge {
		reason := "no reading newer than the action it judges within " + f.maxAge.String()
		if !a.IsZero() {
			reason += fmt.Sprintf("; the newest is from %s, %v before the decision", a.UTC().Format("15:04:05.000"), r.At.Sub(a).Round(time.Millisecond))
		}
		return false, &ReadingError{Reading: f.reading, Since: f.since, Reason: reason}
	}
	return false, nil
}

// nap is the pause between polls: PollEvery once the readings are fresh,
// and a tenth of the reading age (on the instruments' clock) while waiting
// for a fresh one.
func (p *proc) nap(fresh bool, f *freshness) time.Duration {
	if fresh || f == nil {
		return p.env.PollEvery
	}
	return max(min(p.env.PollEvery, p.env.Clock.Process(f.maxAge/10)), time.Nanosecond)
}

// waitFresh polls the readings until cond holds on a fresh reading (see
// freshness; cond never sees another) or fails: with a *ReadingError when
// no fresh reading comes, with ErrCondition after timeout (process time).
func (p *proc) waitFresh(ctx context.Context, stage, what string, f *freshness, timeout time.Duration,
	cond func(envelope.Readings) (bool, error)) (envelope.Readings, error) {
	deadline := p.env.Clock.Now().Add(timeout)
	for {
		r, err := p.read(ctx, stage, false)
		if err != nil {
			return r, err
		}
		fresh, err := f.judge(r)
		if err != nil {
			p.row(stage, r)
			return r, err
		}
		if fresh {
			ok, err := cond(r)
			if err != nil {
				return r, err
			}
			if ok {
				p.row(stage, r)
				return r, nil
			}
		}
		if p.env.Clock.Now().After(deadline) {
			p.row(stage, r)
			return r, fmt.Errorf("%w: %s within %v", ErrCondition, what, timeout)
		}
		if err := p.env.Clock.Sleep(ctx, p.nap(fresh, f)); err != nil {
			return r, err
		}
	}
}

// judged is what a hold checks on every fresh reading.
type judged struct {
	*freshness
	check func(envelope.Readings) error
}

// hold waits d of process time, reading the rig every PollEvery, and calls
// tick every CheckpointEvery with the time held. With j, every fresh reading
// is checked (the check may fail the hold) and a reading that stays stale
// fails it.
func (p *proc) hold(ctx context.Context, stage string, d time.Duration, j *judged,
	tick func(held time.Duration) error) error {
	start := p.env.Clock.Now()
	lastTick := start
	for {
		r, err := p.read(ctx, stage, false)
		if err != nil {
			return err
		}
		fresh := true
		if j != nil {
			if fresh, err = j.judge(r); err != nil {
				return err
			}
			if fresh {
				if err := j.check(r); err != nil {
					return err
				}
			}
		}
		now := p.env.Clock.Now()
		held := now.Sub(start)
		if held >= d {
			p.row(stage, r)
			return nil
		}
		if tick != nil && now.Sub(lastTick) >= p.env.CheckpointEvery {
			lastTick = now
			if err := tick(held); err != nil {
				return err
			}
		}
		var f *freshness
		if j != nil {
			f = j.freshness
		}
		if err := p.env.Clock.Sleep(ctx, min(p.nap(fresh, f), d-held)); err != nil {
			return err
		}
	}
}

// profiles emits the intermediate_result data of the rows logged since the
// process time from (elapsed seconds).
func (p *proc) profiles(ctx context.Context, stage string, from float64) error {
	type point struct {
		T float64 `json:"elapsed_seconds"`
		V float64 `json:"value"`
	}
	var temp, pres []point
	for _, r := range p.rows {
		if r.Elapsed < from {
			continue
		}
		if r.TemperatureC != nil {
			temp = append(temp, point{r.Elapsed, *r.TemperatureC})
		}
		if r.PressurePa != nil {
			pres = append(pres, point{r.Elapsed, *r.PressurePa})
		}
	}
	if err := p.emit(ctx, lifecycle.EventIntermediateResult, IntermediateResult{ResultType: "temperature_profile",
		Data: map[string]any{"stage": stage, "unit": "celsius", "points": temp}, IsPartial: true}); err != nil {
		return err
	}
	return p.emit(ctx, lifecycle.EventIntermediateResult, IntermediateResult{ResultType: "pressure_profile",
		Data: map[string]any{"stage": stage, "unit": "pascal", "points": pres}, IsPartial: true})
}

// writeArtifact writes data to dir/file (sealed under env.AtRest when
// set) and describes it: size and checksum are those of data, the
// plaintext.
func writeArtifact(env *Env, name, file, mime string, data []byte) (Artifact, error) {
	if env.ArtifactDir == "" {
		return Artifact{}, errors.New("executor: no artifact directory")
	}
	if err := os.MkdirAll(env.ArtifactDir, 0o750); err != nil {
		return Artifact{}, fmt.Errorf("executor: artifact %s: %w", name, err)
	}
	path := filepath.Join(env.ArtifactDir, file)
	if env.AtRest != nil {
		if err := env.AtRest.WriteFile(path, data, atrest.ArtifactBinding(env.SessionID, file), 0o640); err != nil {
			return Artifact{}, fmt.Errorf("executor: artifact %s: %w", name, err)
		}
	} else {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o640); err != nil {
			return Artifact{}, fmt.Errorf("executor: artifact %s: %w", name, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return Artifact{}, fmt.Errorf("executor: artifact %s: %w", name, err)
		}
	}
	sum := sha256.Sum256(data)
	return Artifact{Name: name, Type: mime, URI: "hcp://" + env.SessionID + "/artifacts/" + file, Path: path,
		SizeBytes: int64(len(data)), Checksum: "sha256:" + hex.EncodeToString(sum[:]), Sealed: env.AtRest != nil}, nil
}

// logZones is the heated zones of a rig of several, in the
// configuration's order: a growth log's columns and traces of each zone;
// none on a rig of one (or without an envelope).
func logZones(env *envelope.Envelope) []string {
	if env != nil {
		if zs := env.Spec().ZoneNames(); len(zs) > 1 {
			return zs
		}
	}
	return nil
}

// growthCSV renders rows as CSV with one temperature column per heated
// zone of zones (temperature_<zone>_c: a rig of several; none on a rig
// of one) and one flow column per gas (sorted).
func growthCSV(rows []LogRow, zones []string) []byte {
	var gases []string
	for _, r := range rows {
		for g := range r.Flows {
			if !slices.Contains(gases, g) {
				gases = append(gases, g)
			}
		}
	}
	slices.Sort(gases)
	b := []byte("elapsed_seconds,stage,temperature_c")
	for _, z := range zones {
		b = append(b, ",temperature_"+z+"_c"...)
	}
	b = append(b, ",pressure_pa"...)
	for _, g := range gases {
		b = append(b, ",flow_"+g+"_sccm"...)
	}
	b = append(b, '\n')
	cell := func(v *float64) { // ",value", or "," without one
		b = append(b, ',')
		if v != nil {
			b = fmt.Append(b, *v)
		}
	}
	for _, r := range rows {
		b = fmt.Appendf(b, "%v,%s", r.Elapsed, r.Stage)
		cell(r.TemperatureC)
		for _, z := range zones {
			cell(r.Zones[z].TemperatureC)
		}
		cell(r.PressurePa)
		for _, g := range gases {
			var f *float64
			if v, ok := r.Flows[g]; ok {
				f = &v
			}
			cell(f)
		}
		b = append(b, '\n')
	}
	return b
}
