package token

import (
	"errors"
	"testing"
	"time"

	"hcp-edge/device/catalog"
	"hcp-edge/internal/wallclock"
)

// TestClockStep: a token this Authority issued is judged on the monotonic
// clock — a step of the wall clock by +6 h or −6 h neither expires it nor
// makes it not yet valid, and it still expires after its lifetime of real
// time; a token of an earlier process (same key, another Authority) is
// judged by the wall clock. A revocation is kept across a forward step
// while the token it revokes could still be valid.
func TestClockStep(t *testing.T) {
	clk := &clock{now: t0}
	pc := wallclock.NewFrom(clk.Now)
	key := newKey(t)
	a, err := New(key, Opts{Clock: pc})
	if err != nil {
		t.Fatal(err)
	}
	earlier, err := New(key, Opts{Clock: wallclock.NewFrom(clk.Now)}) // the process before a restart
	if err != nil {
		t.Fatal(err)
	}
	c := baseClaims("sha256:x", catalog.PermissionOperate)
	tok, _, err := a.Issue(c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := earlier.Issue(c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rev := NewRevocations(pc)
	rev.Revoke("s-rev", pc.Now().Add(time.Hour+time.Minute))

	verify := func(what, tok string, want error) {
		t.Helper()
		_, err := a.Verify(tok)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Fatalf("%s: err = %v, want %v", what, err, want)
		}
	}
	clk.Set(t0.Add(10 * time.Minute))
	verify("before any step", tok, nil)
	verify("earlier process's token before any step", old, nil)

	pc.Step(6 * time.Hour)
	verify("own token after +6h", tok, nil)
	rev.Revoke("other", time.Time{}) // prunes
	if !rev.Revoked("s-rev") {
		t.Fatal("a forward step dropped a revocation whose token is still valid")
	}
	// The wall clock says 6 h 10 min since the earlier process issued it.
	verify("earlier process's token after +6h", old, ErrExpired)

	pc.Step(-12 * time.Hour)
	verify("own token after −6h from the start", tok, nil)
	// Expired when the wall clock was 6 h ahead: a step back does not revive it.
	verify("earlier process's token after −6h", old, ErrExpired)

	clk.Set(t0.Add(time.Hour + 4*time.Second))
	verify("own token at the end of its life, within leeway", tok, nil)
	clk.Set(t0.Add(time.Hour + 6*time.Second))
	verify("own token after its lifetime of real time", tok, ErrExpired)
	// The wall clock now runs 6 h behind the revocation's stamp: it is
	// kept 6 h longer (the safe side), then dropped.
	clk.Set(t0.Add(2*time.Hour + 2*time.Minute))
	rev.Revoke("other", time.Time{})
	if !rev.Revoked("s-rev") {
		t.Fatal("a revocation dropped while the wall clock runs behind its stamp")
	}
	clk.Set(t0.Add(8*time.Hour + 2*time.Minute))
	rev.Revoke("other", time.Time{})
	if rev.Revoked("s-rev") {
		t.Fatal("a revocation outlived its token by more than the minute and the step back")
	}
}

// TestClockStepEarlierProcess: a token of an earlier process is judged at
// the latest the wall clock has been (wallclock.Clock.Ceil): a step back
// neither makes it "not yet valid" nor keeps it valid past its exp.
func TestClockStepEarlierProcess(t *testing.T) {
	clk := &clock{now: t0}
	key := newKey(t)
	earlier, err := New(key, Opts{Clock: wallclock.NewFrom(clk.Now)})
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := earlier.Issue(baseClaims("sha256:x", catalog.PermissionOperate), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pc := wallclock.NewFrom(clk.Now)
	a, err := New(key, Opts{Clock: pc}) // the process after a restart
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(50 * time.Minute))
	pc.Step(-6 * time.Hour)
	if _, err := a.Verify(old); err != nil {
		t.Fatalf("after a step back within its life: %v", err)
	}
	clk.Set(t0.Add(time.Hour + 6*time.Second))
	if _, err := a.Verify(old); !errors.Is(err, ErrExpired) {
		t.Fatalf("past its exp, the wall clock 6 h behind: %v", err)
	}
}
