package rigconfig

import (
	"strings"
	"testing"
	"time"
)

func TestAMQPDefaultsAndEnv(t *testing.T) {
	t.Setenv("HCP_AMQP_URL", "")
	t.Setenv("HCP_AMQP_URLS", "")
	t.Setenv("HCP_CALLEE_ID", "")
	var a AMQP
	a.defaults()
	if a.URL != "" || a.CalleeID != DefaultCalleeID || a.Heartbeat != 30*time.Second || a.Prefetch != 256 ||
		a.TelemetryBound != 10000 || a.FlushTimeout != 5*time.Second || !a.QuorumQueues() || a.DeliveryLimit != 5 || len(a.URLs) != 0 {
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

// TestAMQPEndpoints: url or urls from the file, $HCP_AMQP_URLS over both,
// $HCP_AMQP_URL over the file; URL is always the first endpoint.
func TestAMQPEndpoints(t *testing.T) {
	const a1, a2, a3 = "amqp://u:p1@n1:5681/hcp", "amqp://u:p2@n2:5682/hcp", "amqp://u:p3@n3:5683/hcp"
	tests := []struct {
		name       string
		env, envs  string
		file       AMQP
		want       []string
		redactedOK string
	}{
		{"url alone", "", "", AMQP{URL: a1}, []string{a1}, "amqp://u:xxxxx@n1:5681/hcp"},
		{"urls", "", "", AMQP{URLs: []string{a1, a2}}, []string{a1, a2}, "amqp://u:xxxxx@n1:5681/hcp,amqp://u:xxxxx@n2:5682/hcp"},
		{"url then urls, empty expansions dropped", "", "", AMQP{URL: a1, URLs: []string{"${HCP_UNSET_FOR_TEST}", a3}}, []string{a1, a3}, ""},
		{"HCP_AMQP_URLS over the file", "", a2 + ", " + a3, AMQP{URLs: []string{a1}}, []string{a2, a3}, ""},
		{"HCP_AMQP_URLS over HCP_AMQP_URL", a1, a3 + "," + a2, AMQP{}, []string{a3, a2}, ""},
		{"HCP_AMQP_URL over urls", a3, "", AMQP{URLs: []string{a1, a2}}, []string{a3}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HCP_AMQP_URL", tc.env)
			t.Setenv("HCP_AMQP_URLS", tc.envs)
			a := tc.file
			a.defaults()
			if strings.Join(a.URLs, " ") != strings.Join(tc.want, " ") || a.URL != tc.want[0] {
				t.Fatalf("URLs %v URL %q, want %v", a.URLs, a.URL, tc.want)
			}
			var bad []string
			a.validate(func(key, format string, args ...any) { bad = append(bad, key) })
			if len(bad) > 0 {
				t.Fatalf("refused: %v", bad)
			}
			if r := a.RedactedURL(); tc.redactedOK != "" && r != tc.redactedOK {
				t.Fatalf("RedactedURL %q, want %q", r, tc.redactedOK)
			}
		})
	}
}

func TestAMQPValidate(t *testing.T) {
	t.Setenv("HCP_AMQP_URL", "")
	t.Setenv("HCP_AMQP_URLS", "")
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
		{"cluster", AMQP{URLs: []string{"amqp://u:p@n1:5681/hcp", "amqp://u:p@n2:5682/hcp"}}, ""},
		{"url and urls", AMQP{URL: "amqp://u:p@n1/hcp", URLs: []string{"amqp://u:p@n2/hcp", "$HCP_UNSET_FOR_TEST"}}, ""},
		{"mixed schemes", AMQP{URLs: []string{"amqps://u:p@n1/hcp", "amqp://u:p@n2/hcp"}}, "agent.amqp.urls"},
		{"mixed logins", AMQP{URLs: []string{"amqp://u:p@n1/hcp", "amqp://v:p@n2/hcp"}}, "agent.amqp.urls"},
		{"delivery limit negative", AMQP{DeliveryLimit: -1}, "agent.amqp.delivery_limit"},
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
