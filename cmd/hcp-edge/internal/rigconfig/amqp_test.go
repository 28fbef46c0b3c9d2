package rigconfig

import (
	"strings"
	"testing"
	"time"
)

func TestAMQPDefaultsAndEnv(t *testing.T) {
	t.Setenv("HCP_AMQP_URL", "")
	t.Setenv("HCP_CALLEE_ID", "")
	var a AMQP
	a.defaults()
	if a.URL != "" || a.CalleeID != DefaultCalleeID || a.Heartbeat != 30*time.Second || a.Prefetch != 10 ||
		a.TelemetryBound != 10000 || a.FlushTimeout != 5*time.Second {
		t.Fatalf("defaults %+v", a)
	}
	t.Setenv("HCP_AMQP_URL", "amqp://u:p@h:5672/hcp")
	t.Setenv("HCP_CALLEE_ID", "edge-7")
	b := AMQP{URL: "amqp://file", CalleeID: "file-id"}
	b.defaults()
	if b.URL != "amqp://u:p@h:5672/hcp" || b.CalleeID != "edge-7" {
		t.Fatalf("environment did not override: %+v", b)
	}
	if got := b.RedactedURL(); strings.Contains(got, ":p@") {
		t.Fatalf("RedactedURL %q shows the password", got)
	}
}

func TestAMQPValidate(t *testing.T) {
	t.Setenv("HCP_AMQP_URL", "")
	t.Setenv("HCP_CALLEE_ID", "")
	tests := []struct {
		name string
		a    AMQP
		key  string // "" = valid
	}{
		{"no uplink", AMQP{}, ""},
		{"amqp", AMQP{URL: "amqp://u:p@127.0.0.1:5672/hcp"}, ""},
		{"amqps with files", AMQP{URL: "amqps://u:p@broker/hcp", CAFile: "/ca", CertFile: "/c", KeyFile: "/k"}, ""},
		{"bad scheme", AMQP{URL: "http://broker"}, "agent.amqp.url"},
		{"no host", AMQP{URL: "amqp:///hcp"}, "agent.amqp.url"},
		{"TLS files on amqp", AMQP{URL: "amqp://broker/hcp", CAFile: "/ca"}, "agent.amqp.url"},
		{"cert without key", AMQP{URL: "amqps://broker/hcp", CertFile: "/c"}, "agent.amqp.cert_file"},
		{"callee id with a dot", AMQP{CalleeID: "a.b"}, "agent.amqp.callee_id"},
		{"prefetch negative", AMQP{Prefetch: -1}, "agent.amqp.prefetch"},
		{"heartbeat negative", AMQP{Heartbeat: -time.Second}, "agent.amqp.heartbeat"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			a.defaults()
			var got []string
			a.validate(func(key, format string, args ...any) { got = append(got, key) })
			switch {
			case tc.key == "" && len(got) > 0:
				t.Fatalf("refused: %v", got)
			case tc.key != "" && (len(got) == 0 || got[0] != tc.key):
				t.Fatalf("problems %v, want %s", got, tc.key)
			}
		})
	}
}
