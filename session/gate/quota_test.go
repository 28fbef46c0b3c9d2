package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/transport/wire"
)

func rigStatus(caller string) *wire.TaskSubmit {
	return &wire.TaskSubmit{Capability: "rig-status", CapabilityVersion: "1.x", CallerID: caller, Intent: "status",
		Inputs: json.RawMessage(`{}`)}
}

// TestQuotas (issue 24): past submits_per_minute or open_sessions the gate
// refuses with resource_unavailable naming the quota, the caller and when
// it frees (with retry_after), audited like every decision; a message id
// decided again does not count twice; the window frees after a minute; a
// caller's override replaces the default, "*" is none, another caller is
// not affected.
func TestQuotas(t *testing.T) {
	now := weekday
	cfg := testConfig()
	unl, three := Unlimited, Limit(3)
	cfg.Quotas = Quotas{SubmitsPerMinute: Limit(2), OpenSessions: Limit(5), Callers: map[string]CallerQuotas{
		"limited": {SubmitsPerMinute: &unl, OpenSessions: &three}}}
	rec := &memRecorder{}
	g, err := New(cfg, testRegistry(t), rec, Opts{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	decide := func(user, caller, id string, open int) Decision {
		t.Helper()
		d, err := g.Decide(ctx, Request{MessageID: id, BrokerUser: user, Submit: rigStatus(caller), OpenSessions: open})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, id := range []string{"a1", "a2", "a1"} { // a1 twice: one slot
		if d := decide("alpha", "harness-alpha-001", id, 0); d.Outcome != Accepted {
			t.Fatalf("%s: %+v", id, d.Rejection)
		}
	}
	now = now.Add(10 * time.Second)
	d := decide("alpha", "harness-alpha-001", "a3", 0)
	frees := weekday.Add(time.Minute).UTC().Format(wire.TimestampLayout)
	want := "submits_per_minute 2 exceeded for harness-alpha-001; frees at " + frees
	if d.Outcome != Rejected || d.Rejection.Code != ReasonResourceUnavailable || d.Rejection.Message != want ||
		!errors.Is(d.Rejection, ErrQuota) || !errors.Is(d.Rejection, ErrResourceUnavailable) {
		t.Fatalf("third submit: %+v, want %q", d.Rejection, want)
	}
	if p := d.Rejection.Payload(); p.RetryAfter != 50 || p.ReasonCode != "resource_unavailable" || p.Validate() != nil {
		t.Errorf("payload %+v: want retry_after 50", p)
	}
	last := rec.entries[len(rec.entries)-1]
	if last.SessionID != "a3" || !strings.Contains(last.Detail, `"reason_code":"resource_unavailable"`) || !strings.Contains(last.Detail, "submits_per_minute 2") {
		t.Errorf("refusal not audited: %+v", last)
	}
	// Another caller has its own window; "*" is none.
	for i := range 10 {
		if d := decide("lim", "limited", "l"+string(rune('0'+i)), 0); d.Outcome != Accepted {
			t.Fatalf("limited %d: %+v", i, d.Rejection)
		}
	}
	// open_sessions: the caller's override (3), and the default (5).
	if d := decide("lim", "limited", "l-open", 3); d.Outcome != Rejected ||
		d.Rejection.Message != "open_sessions 3 reached for limited (3 open); frees when one of its sessions ends" {
		t.Errorf("open_sessions: %+v", d.Rejection)
	}
	if !g.OpenSessionsLimited("limited") || !g.OpenSessionsLimited("harness-alpha-001") {
		t.Error("OpenSessionsLimited")
	}
	// The window frees a minute after the first submit.
	now = weekday.Add(time.Minute)
	if d := decide("alpha", "harness-alpha-001", "a4", 4); d.Outcome != Accepted {
		t.Fatalf("after a minute: %+v", d.Rejection)
	}
	// A submit the open_sessions quota refuses still counts as a submit.
	if d := decide("alpha", "harness-alpha-001", "a5", 5); d.Outcome != Rejected || !strings.HasPrefix(d.Rejection.Message, "open_sessions 5 reached") {
		t.Fatalf("open_sessions default: %+v", d.Rejection)
	}
	if d := decide("alpha", "harness-alpha-001", "a6", 0); d.Outcome != Rejected || !strings.HasPrefix(d.Rejection.Message, "submits_per_minute") {
		t.Fatalf("a6: %+v", d.Rejection)
	}
	// No quota at all: the zero Config.
	cfg.Quotas = Quotas{}
	g2, err := New(cfg, testRegistry(t), rec, Opts{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		d, err := g2.Decide(ctx, Request{MessageID: "z" + string(rune(i)), BrokerUser: "alpha", Submit: rigStatus("harness-alpha-001"), OpenSessions: 1000})
		if err != nil || d.Outcome != Accepted {
			t.Fatalf("no quotas: %+v %v", d.Rejection, err)
		}
	}
	if g2.OpenSessionsLimited("harness-alpha-001") {
		t.Error("OpenSessionsLimited without a quota")
	}
}

// TestQuotaZero: a quota of 0 admits nothing and names no time.
func TestQuotaZero(t *testing.T) {
	cfg := testConfig()
	cfg.Quotas = Quotas{SubmitsPerMinute: Limit(0)}
	g, err := New(cfg, testRegistry(t), &memRecorder{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := g.Decide(context.Background(), Request{MessageID: "m", BrokerUser: "alpha", Submit: rigStatus("harness-alpha-001")})
	if err != nil || d.Outcome != Rejected || d.Rejection.Message != "submits_per_minute 0 for harness-alpha-001: no submit is allowed" ||
		d.Rejection.Payload().RetryAfter != 0 {
		t.Fatalf("%+v %v", d.Rejection, err)
	}
}

// TestQuotaConfig: the text forms, and a negative quota refused by New.
func TestQuotaConfig(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Quota
		bad      bool
	}{
		{name: "count", in: "60", want: Limit(60)},
		{name: "zero", in: "0", want: Limit(0)},
		{name: "none", in: "*", want: Unlimited},
		{name: "negative", in: "-1", bad: true},
		{name: "word", in: "lots", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q Quota
			err := q.UnmarshalText([]byte(tc.in))
			if (err != nil) != tc.bad || (!tc.bad && q != tc.want) {
				t.Fatalf("%q → %v, %v", tc.in, q, err)
			}
			if tc.bad {
				return
			}
			b, _ := json.Marshal(q)
			var back Quota
			if err := json.Unmarshal(b, &back); err != nil || back != q {
				t.Errorf("JSON %s → %v %v", b, back, err)
			}
		})
	}
	cfg := testConfig()
	neg := Limit(-2)
	cfg.Quotas = Quotas{OpenSessions: Limit(-1), Callers: map[string]CallerQuotas{"limited": {SubmitsPerMinute: &neg}}}
	_, err := New(cfg, testRegistry(t), &memRecorder{}, Opts{})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "quotas.open_sessions: -1 is negative") ||
		!strings.Contains(err.Error(), "quotas.callers.limited.submits_per_minute: -2 is negative") {
		t.Fatalf("err = %v", err)
	}
}
