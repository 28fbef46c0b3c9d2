package alert

import (
	"fmt"
	"slices"
	"time"
)

// Config is the alerts: section of the agent's configuration.
type Config struct {
	// Receivers are where alerts go; none: alerts are off.
	Receivers []ReceiverConfig `yaml:"receivers"`
	// GroupWindow: of the alerts of one class and key, the first goes out
	// at once, and those within GroupWindow after it go out as one alert
	// with their count at the window's end (default 60s).
	GroupWindow time.Duration `yaml:"group_window"`
	// MaxPerHour bounds the alerts a receiver is sent in any hour; past
	// it, alerts wait (they are not dropped) (default 60).
	MaxPerHour int `yaml:"max_per_hour"`
	// RetryMin and RetryMax bound the exponential backoff between two
	// attempts of one delivery (defaults 5s and 10m).
	RetryMin time.Duration `yaml:"retry_min"`
	RetryMax time.Duration `yaml:"retry_max"`
	// GiveUpAfter: a delivery still failing this long after the alert
	// was raised is given up, audited as such (default 72h).
	GiveUpAfter time.Duration `yaml:"give_up_after"`
	// BrokerUnreachableAfter: the agent raises broker_unreachable once its
	// broker connection has been down this long (default 5m).
	BrokerUnreachableAfter time.Duration `yaml:"broker_unreachable_after"`
}

// ReceiverConfig is one receiver and its route.
type ReceiverConfig struct {
	// Name names the receiver in the audit log and the CLI (default: the
	// URL's scheme and host).
	Name string `yaml:"name"`
	// URL is smtp://USER@HOST:PORT/?from=ADDR&to=ADDR[,ADDR]&password_file=PATH
	// (STARTTLS required unless HOST is loopback; the password file must
	// not be readable by group or others), or an http(s):// URL that gets
	// the alert as a JSON POST (docs/ALERTS.md).
	URL string `yaml:"url"`
	// Classes are the classes routed to this receiver (none: every class).
	Classes []Class `yaml:"classes"`
	// MinSeverity is the lowest severity routed to it (default warning).
	MinSeverity Severity `yaml:"min_severity"`
}

// Defaults of the section.
const (
	DefaultGroupWindow = 60 * time.Second
	DefaultMaxPerHour  = 60
	DefaultRetryMin    = 5 * time.Second
	DefaultRetryMax    = 10 * time.Minute
	DefaultGiveUpAfter = 72 * time.Hour
	// DefaultBrokerUnreachableAfter is BrokerUnreachableAfter's default.
	DefaultBrokerUnreachableAfter = 5 * time.Minute
)

// Defaults fills the zero fields.
func (c *Config) Defaults() {
	if c.GroupWindow == 0 {
		c.GroupWindow = DefaultGroupWindow
	}
	if c.MaxPerHour == 0 {
		c.MaxPerHour = DefaultMaxPerHour
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.GiveUpAfter == 0 {
		c.GiveUpAfter = DefaultGiveUpAfter
	}
	if c.BrokerUnreachableAfter == 0 {
		c.BrokerUnreachableAfter = DefaultBrokerUnreachableAfter
	}
	for i := range c.Receivers {
		if c.Receivers[i].MinSeverity == "" {
			c.Receivers[i].MinSeverity = SeverityWarning
		}
	}
}

// Check returns every problem of the section (after Defaults), each as
// "alerts.KEY: message": a URL that does not parse, a missing or
// group/world-readable credential file, an unknown class or severity, a
// duplicate name, a bound out of range.
func (c Config) Check() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("alerts."+key+": "+format, a...))
	}
	if c.GroupWindow < 0 || c.GroupWindow > 24*time.Hour {
		bad("group_window", "%v is outside 0..24h", c.GroupWindow)
	}
	if c.MaxPerHour < 1 || c.MaxPerHour > 3600 {
		bad("max_per_hour", "%d is outside 1..3600", c.MaxPerHour)
	}
	if c.RetryMin < 10*time.Millisecond || c.RetryMax < c.RetryMin || c.RetryMax > 24*time.Hour {
		bad("retry_min", "want 10ms <= retry_min (%v) <= retry_max (%v) <= 24h", c.RetryMin, c.RetryMax)
	}
	if c.GiveUpAfter < time.Minute {
		bad("give_up_after", "%v is shorter than 1m", c.GiveUpAfter)
	}
	if c.BrokerUnreachableAfter < 10*time.Second {
		bad("broker_unreachable_after", "%v is shorter than 10s", c.BrokerUnreachableAfter)
	}
	names := map[string]int{}
	for i, rc := range c.Receivers {
		k := fmt.Sprintf("receivers[%d]", i)
		r, err := newReceiver(rc)
		if err != nil {
			bad(k+".url", "%w", err)
		} else if j, dup := names[r.name()]; dup {
			bad(k+".name", "%q is the name of receivers[%d] too", r.name(), j)
		} else {
			names[r.name()] = i
		}
		for j, cl := range rc.Classes {
			if !slices.Contains(Classes(), cl) {
				bad(fmt.Sprintf("%s.classes[%d]", k, j), "%q is not one of %v", cl, Classes())
			}
		}
		if rc.MinSeverity.rank() == 0 {
			bad(k+".min_severity", "%q is not info, warning or critical", rc.MinSeverity)
		}
	}
	return errs
}

// routes reports whether rc takes a.
func (rc ReceiverConfig) routes(a Alert) bool {
	if a.Class == ClassTest || a.Class == ClassOverflow {
		return true
	}
	if len(rc.Classes) > 0 && !slices.Contains(rc.Classes, a.Class) {
		return false
	}
	return a.Severity.rank() >= rc.MinSeverity.rank()
}
