package envelope

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// lateFixture is the fixture with the monitor's default poll periods known
// to the interlock and a 200 ms read timeout: the wait bound for the gauge
// is 3 × 100 ms + 200 ms = 500 ms.
func lateFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.il.opts.ReadTimeout = 200 * time.Millisecond
	f.il.setPollPeriods(50*time.Millisecond, 100*time.Millisecond)
	return f
}

const gaugeBound = 500 * time.Millisecond

func (p *plant) setFail(name string, fail bool) {
	p.mu.Lock()
	p.fail[name] = fail
	p.mu.Unlock()
}

// TestLateReadingIsWaitedFor: the heater needs a fresh chamber pressure;
// the gauge does not answer the interlock's first snapshot, then answers
// 150 ms later (a busy host, not a dead gauge). The action waits for the
// fresh reading, is judged on it and executed; the result says how long it
// waited, the audit holds no refusal, and the tool statistics count it.
func TestLateReadingIsWaitedFor(t *testing.T) {
	f := lateFixture(t)
	f.p.setFail("gauge", true)
	time.AfterFunc(150*time.Millisecond, func() { f.p.setFail("gauge", false) })
	res, err := f.il.apply(context.Background(), "ok", HeaterAction(true))
	if err != nil {
		t.Fatalf("a late reading refused the action: %v", err)
	}
	if res.Waited < 100*time.Millisecond || res.Waited > gaugeBound {
		t.Fatalf("waited %v, want about 150 ms and within the %v bound", res.Waited, gaugeBound)
	}
	for _, e := range f.audit.entries {
		if e.Decision == DecisionRefused {
			t.Fatalf("a late reading was audited as a refusal: %+v", e)
		}
	}
	if f.audit.last().Decision != DecisionExecuted || f.p.writeCount() != 1 {
		t.Fatalf("audit %+v, writes %d", f.audit.entries, f.p.writeCount())
	}
	t.Logf("executed after waiting %v for a fresh gauge reading", res.Waited.Round(time.Millisecond))
}

// TestSilentInstrumentFailsClosedWithinBound: the gauge never answers. The
// action is refused stale_reading once the bound has passed (not before,
// and not much after), the refusal says how long it waited, nothing is
// written, and the one refusal is audited.
func TestSilentInstrumentFailsClosedWithinBound(t *testing.T) {
	f := lateFixture(t)
	f.p.setFail("gauge", true)
	start := time.Now()
	_, err := f.il.apply(context.Background(), "ok", HeaterAction(true))
	took := time.Since(start)
	var v *Violation
	if !errors.As(err, &v) || v.Rule != RuleStale {
		t.Fatalf("err %v, want a stale_reading refusal", err)
	}
	if v.Waited < gaugeBound || took > gaugeBound+f.il.opts.ReadTimeout+time.Second {
		t.Fatalf("refused after waiting %v (call %v), want the %v bound", v.Waited, took, gaugeBound)
	}
	if !strings.Contains(v.Reason, "chamber pressure") || !strings.Contains(v.Reason, "waited") {
		t.Fatalf("the refusal does not name the reading and the wait: %q", v.Reason)
	}
	if f.p.writeCount() != 0 {
		t.Fatalf("a refused action reached the device: %+v", f.p.writes)
	}
	if f.audit.count() != 1 || f.audit.last().Rule != RuleStale {
		t.Fatalf("audit %+v", f.audit.entries)
	}
	t.Logf("refused after %v: %v", took.Round(time.Millisecond), v)
}

// TestSafeStateEndsTheWait: an e-stop while an action waits for a fresh
// reading ends the wait at once; the action is refused, nothing written.
func TestSafeStateEndsTheWait(t *testing.T) {
	f := lateFixture(t)
	f.il.opts.ReadTimeout = 5 * time.Second // a bound far beyond the e-stop
	f.p.setFail("gauge", true)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := f.il.apply(context.Background(), "ok", HeaterAction(true))
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := f.il.SafeState(context.Background(), "test e-stop"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the action went through an e-stop")
		}
		t.Logf("ended after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(3 * time.Second):
		t.Fatal("the e-stop did not end the wait")
	}
	if f.p.writeCount() != 0 {
		t.Fatalf("writes %+v", f.p.writes)
	}
}

// TestToolStatsCountFreshWaits: a call whose action waited for a fresh
// reading is counted, refused or executed.
func TestToolStatsCountFreshWaits(t *testing.T) {
	o := outcome{res: Result{Waited: 40 * time.Millisecond}}
	if o.freshWait() != 40*time.Millisecond {
		t.Fatal(o.freshWait())
	}
	o = outcome{err: &Violation{Rule: RuleStale, Waited: time.Second}}
	if o.freshWait() != time.Second {
		t.Fatal(o.freshWait())
	}
	// A wait the call's own deadline ended is counted too.
	o = outcome{err: fmt.Errorf("execute: %w", &FreshWaitEnded{Stale: &Violation{Rule: RuleStale}, Waited: 30 * time.Millisecond, Cause: context.DeadlineExceeded})}
	if o.freshWait() != 30*time.Millisecond {
		t.Fatal(o.freshWait())
	}
}
