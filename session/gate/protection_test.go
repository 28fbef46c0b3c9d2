package gate

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestDataClassificationProtection: every classification under every
// protection. T1 and T2 pass whatever the agent offers; T3 and T4 only
// with a TLS uplink and an at-rest key, and are Encrypted then; otherwise
// forbidden (ErrUnprotected), the message naming exactly what is missing.
func TestDataClassificationProtection(t *testing.T) {
	const (
		noTLS = "the broker uplink is not TLS"
		noKey = "no at-rest encryption key is configured"
	)
	prots := []struct {
		name    string
		prot    Protection
		missing []string // in the refusal of T3/T4
	}{
		{"neither", Protection{}, []string{noTLS, noKey}},
		{"TLS only", Protection{UplinkTLS: true}, []string{noKey}},
		{"key only", Protection{AtRestKey: true}, []string{noTLS}},
		{"TLS and key", Protection{UplinkTLS: true, AtRestKey: true}, nil},
	}
	for _, p := range prots {
		for _, class := range []Classification{T1, T2, T3, T4} {
			t.Run(p.name+"/"+string(class), func(t *testing.T) {
				g, _ := newGate(t, weekday, p.prot)
				if g.Protection() != p.prot {
					t.Fatalf("Protection() = %+v", g.Protection())
				}
				s := seed(t)
				s.Constraints.DataClassification = string(class)
				d, err := g.Decide(context.Background(), Request{MessageID: "m", SessionID: "s", BrokerUser: "alpha", Submit: s})
				if err != nil {
					t.Fatal(err)
				}
				refused := class.Rank() >= 3 && len(p.missing) > 0
				if !refused {
					if d.Outcome != PendingApproval || d.DataClassification != class || d.AuditedAccess != (class != T1) ||
						d.Encrypted != (class.Rank() >= 3) {
						t.Fatalf("decision %+v %+v", d, d.Rejection)
					}
					return
				}
				r := d.Rejection
				if d.Outcome != Rejected || r == nil || r.Code != ReasonForbidden || !errors.Is(r, ErrForbidden) ||
					!errors.Is(r, ErrUnprotected) || d.Encrypted {
					t.Fatalf("decision %+v %+v", d, r)
				}
				want := "data classified " + string(class) + " needs encryption in transit and at rest: " + strings.Join(p.missing, " and ")
				if r.Message != want {
					t.Fatalf("message %q\nwant    %q", r.Message, want)
				}
				if p := r.Payload(); p.ReasonCode != "forbidden" || p.ReasonMessage != want {
					t.Fatalf("task_rejected %+v", p)
				}
			})
		}
	}
}
