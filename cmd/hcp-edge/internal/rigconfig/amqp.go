package rigconfig

import (
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// AMQP is the uplink to the HCP broker (agent.amqp). With no URL the agent
// serves the local control socket only.
type AMQP struct {
	// URL is amqp:// or amqps://user:password@host:port/vhost. Default
	// $HCP_AMQP_URL (which overrides the file); empty: no uplink.
	URL string `yaml:"url"`
	// CalleeID names the command queue hcp.cmd.{callee_id}. Default
	// $HCP_CALLEE_ID (which overrides the file), else "hcp-edge".
	CalleeID string `yaml:"callee_id"`
	// Heartbeat is the AMQP heartbeat (default 30s).
	Heartbeat time.Duration `yaml:"heartbeat"`
	// Prefetch is the command inbox's basic.qos prefetch (default 10).
	Prefetch int `yaml:"prefetch"`
	// Quorum declares the command queue as a quorum queue (a queue's type
	// cannot change once declared).
	Quorum bool `yaml:"quorum"`
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
	if u := os.Getenv("HCP_AMQP_URL"); u != "" {
		a.URL = u
	}
	a.URL = os.ExpandEnv(a.URL)
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
		a.Prefetch = 10
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
	if a.URL == "" {
		return
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		bad("agent.amqp.url", "%v", redact(err))
		return
	}
	switch u.Scheme {
	case "amqp":
		if a.CAFile != "" || a.CertFile != "" || a.KeyFile != "" {
			bad("agent.amqp.url", "ca_file, cert_file and key_file need an amqps:// URL")
		}
	case "amqps":
	default:
		bad("agent.amqp.url", "scheme %q is neither amqp nor amqps", u.Scheme)
	}
	if u.Host == "" {
		bad("agent.amqp.url", "no host")
	}
}

// RedactedURL is the uplink URL without its password, for logs.
func (a AMQP) RedactedURL() string {
	u, err := url.Parse(a.URL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// redact keeps a URL parse error from echoing the password.
func redact(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s: %v", ue.Op, ue.Err)
	}
	return err
}
