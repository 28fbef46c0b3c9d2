package alert

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// receiver delivers one alert somewhere.
type receiver interface {
	// name names the receiver (never a secret).
	name() string
	// send delivers a; the context's deadline reaches the socket.
	send(ctx context.Context, a Alert) error
}

// newReceiver parses rc's URL into its receiver, checking what can be
// checked without sending (the credential file included).
func newReceiver(rc ReceiverConfig) (receiver, error) {
	u, err := url.Parse(rc.URL)
	if err != nil {
		// url.Parse's error quotes the URL, which may hold a secret.
		return nil, fmt.Errorf("%w: does not parse", ErrBadURL)
	}
	if u.Scheme != "smtp" && u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: scheme %q is not smtp, http or https", ErrBadURL, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: no host in %s", ErrBadURL, redact(u))
	}
	name := rc.Name
	if name == "" {
		name = u.Scheme + "://" + u.Host
	}
	if u.Scheme == "smtp" {
		return newSMTP(name, u)
	}
	return newWebhook(name, u)
}

// redact is u for an error message: its scheme and host only. Its user
// info, path, query and fragment may hold a secret (a password, a
// webhook's token), and the configuration check names the key and line
// anyway.
func redact(u *url.URL) string {
	if u.Host == "" {
		return u.Scheme + ":…"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// isLoopback reports whether host (a name or an address) is the loopback
// interface: "localhost" or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dialContext dials addr over TCP within ctx.
func dialContext(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
