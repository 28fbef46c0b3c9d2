package rigconfig

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"hcp-edge/transport/wire"
)

// AMQP is the uplink to the HCP broker (agent.amqp). With no URL the agent
// serves the local control socket only.
type AMQP struct {
	// URL is amqp:// or amqps://user:password@host:port/vhost. Default
	// $HCP_AMQP_URL (which overrides the file); empty: no uplink. After
	// defaults it is the first endpoint of URLs.
	URL string `yaml:"url"`
	// URLs are further broker endpoints (the nodes of a cluster) after URL,
	// tried in turn: on connection loss the agent moves to the next. Each is
	// expanded ($VAR); an entry that expands to nothing is dropped.
	// $HCP_AMQP_URLS (comma-separated) overrides url and urls, and so does
	// $HCP_AMQP_URL (one endpoint). After defaults it holds every endpoint,
	// URL first.
	URLs []string `yaml:"urls"`
	// CalleeID names the command queue hcp.cmd.{callee_id}. Default
	// $HCP_CALLEE_ID (which overrides the file), else "hcp-edge".
	CalleeID string `yaml:"callee_id"`
	// Heartbeat is the AMQP heartbeat (default 30s).
	Heartbeat time.Duration `yaml:"heartbeat"`
	// Prefetch is the command inbox's basic.qos prefetch (default 256,
	// transport/amqp.DefaultPrefetch: many deliveries in flight, so a flood
	// shares group commits).
	Prefetch int `yaml:"prefetch"`
	// Quorum declares the command queue (and its dead-letter queue) as quorum
	// queues: default true. A queue's type cannot change once declared: an
	// existing queue of another type is used as it is, with a warning
	// (transport/amqp.DeclareCalleeTopology); false declares classic queues.
	Quorum *bool `yaml:"quorum"`
	// DeliveryLimit is the quorum command queue's x-delivery-limit (default
	// 5): a command delivered that often without an ack (a crash loop on
	// it) is dead-lettered to hcp.dlq.{callee_id}, never redelivered forever.
	DeliveryLimit int `yaml:"delivery_limit"`
	// CAFile verifies the broker's certificate (amqps:// only).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client certificate and its key
	// (amqps:// only; both or neither).
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// TelemetryBound is how many telemetry messages (progress, log) may
	// wait in the outbox; past it the oldest is dropped (default 10000).
	TelemetryBound int `yaml:"telemetry_bound"`
	// FlushTimeout bounds, at shutdown, the wait for the broker to confirm
	// what the outbox holds (default 5s); the rest waits for the next start.
	FlushTimeout time.Duration `yaml:"flush_timeout"`
}

// DefaultCalleeID is agent.amqp.callee_id when neither the file nor
// $HCP_CALLEE_ID names one.
const DefaultCalleeID = "hcp-edge"

// defaults fills the zero fields of a from the environment and the defaults.
func (a *AMQP) defaults() {
	switch {
	case os.Getenv("HCP_AMQP_URLS") != "":
		a.URL, a.URLs = "", splitURLs(os.Getenv("HCP_AMQP_URLS"))
	case os.Getenv("HCP_AMQP_URL") != "":
		a.URL, a.URLs = os.Getenv("HCP_AMQP_URL"), nil
	}
	var eps []string
	for _, u := range append([]string{a.URL}, a.URLs...) {
		if u = strings.TrimSpace(os.ExpandEnv(u)); u != "" {
			eps = append(eps, u)
		}
	}
	a.URLs, a.URL = eps, ""
	if len(eps) > 0 {
		a.URL = eps[0]
	}
	if a.Quorum == nil {
		q := true
		a.Quorum = &q
	}
	if a.DeliveryLimit == 0 {
		a.DeliveryLimit = 5
	}
	if c := os.Getenv("HCP_CALLEE_ID"); c != "" {
		a.CalleeID = c
	}
	if a.CalleeID == "" {
		a.CalleeID = DefaultCalleeID
	}
	if a.Heartbeat == 0 {
		a.Heartbeat = 30 * time.Second
	}
	if a.Prefetch == 0 {
		a.Prefetch = 256
	}
	if a.TelemetryBound == 0 {
		a.TelemetryBound = 10000
	}
	if a.FlushTimeout == 0 {
		a.FlushTimeout = 5 * time.Second
	}
	a.CAFile, a.CertFile, a.KeyFile = os.ExpandEnv(a.CAFile), os.ExpandEnv(a.CertFile), os.ExpandEnv(a.KeyFile)
}

// validate checks a (after defaults); bad reports one problem by key.
func (a AMQP) validate(bad func(key, format string, args ...any)) {
	if err := wire.CheckID(a.CalleeID); err != nil {
		bad("agent.amqp.callee_id", "%q: %v", a.CalleeID, err)
	}
	if a.Heartbeat < 0 {
		bad("agent.amqp.heartbeat", "%v is negative", a.Heartbeat)
	}
	if a.Prefetch < 1 || a.Prefetch > 65535 {
		bad("agent.amqp.prefetch", "%d is outside 1..65535", a.Prefetch)
	}
	if a.TelemetryBound < 1 {
		bad("agent.amqp.telemetry_bound", "%d is not positive", a.TelemetryBound)
	}
	if a.FlushTimeout < 0 {
		bad("agent.amqp.flush_timeout", "%v is negative", a.FlushTimeout)
	}
	if (a.CertFile == "") != (a.KeyFile == "") {
		bad("agent.amqp.cert_file", "cert_file and key_file go together")
	}
	if a.DeliveryLimit < 1 {
		bad("agent.amqp.delivery_limit", "%d is not positive", a.DeliveryLimit)
	}
	key := "agent.amqp.url"
	if len(a.URLs) > 1 {
		key = "agent.amqp.urls"
	}
	var first *url.URL
	for i, raw := range a.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			bad(key, "endpoint %d: %v", i+1, redact(err))
			continue
		}
		switch u.Scheme {
		case "amqp":
			if a.CAFile != "" || a.CertFile != "" || a.KeyFile != "" {
				bad(key, "ca_file, cert_file and key_file need an amqps:// URL")
			}
		case "amqps":
		default:
			bad(key, "scheme %q is neither amqp nor amqps", u.Scheme)
		}
		if u.Host == "" {
			bad(key, "endpoint %d: no host", i+1)
		}
		if first == nil {
			first = u
			continue
		}
		// One scheme (a TLS uplink never falls over to plaintext) and one login
		// (the user_id property of every message is the login).
		if u.Scheme != first.Scheme {
			bad(key, "endpoint %d is %s:// but the first is %s://: every endpoint needs the same scheme", i+1, u.Scheme, first.Scheme)
		}
		if u.User.Username() != first.User.Username() {
			bad(key, "endpoint %d logs in as %q but the first as %q: every endpoint needs the same login", i+1, u.User.Username(), first.User.Username())
		}
	}
}

// splitURLs splits a comma-separated endpoint list.
func splitURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// QuorumQueues reports agent.amqp.quorum (true unless set false).
func (a AMQP) QuorumQueues() bool { return a.Quorum == nil || *a.Quorum }

// RedactedURL is the uplink's endpoints without their passwords, for logs
// (comma-separated when there are several).
func (a AMQP) RedactedURL() string {
	eps := a.URLs
	if len(eps) == 0 {
		eps = []string{a.URL}
	}
	out := make([]string, len(eps))
	for i, e := range eps {
		u, err := url.Parse(e)
		if err != nil {
			out[i] = "(unparsable URL)"
			continue
		}
		out[i] = u.Redacted()
	}
	return strings.Join(out, ",")
}

// redact keeps a URL parse error from echoing the password.
func redact(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s: %v", ue.Op, ue.Err)
	}
	return err
}
