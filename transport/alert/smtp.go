package alert

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/smtp"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// smtpReceiver sends alerts as mail over SMTP: STARTTLS (required unless
// the server is on the loopback interface), then AUTH PLAIN when the URL
// names a user, its password read from password_file at each send.
type smtpReceiver struct {
	nm       string
	addr     string // host:port
	host     string
	user     string
	passFile string
	from     string
	to       []string
	// tlsConfig, when set, replaces the default TLS configuration (tests:
	// their own CA).
	tlsConfig *tls.Config
}

func newSMTP(name string, u *url.URL) (*smtpReceiver, error) {
	q := u.Query()
	r := &smtpReceiver{nm: name, host: u.Hostname(), passFile: q.Get("password_file"), from: q.Get("from")}
	port := u.Port()
	if port == "" {
		port = "587"
	}
	r.addr = net.JoinHostPort(r.host, port)
	if u.User != nil {
		r.user = u.User.Username()
		if _, set := u.User.Password(); set {
			return nil, fmt.Errorf("%w: %s: a password in the URL; put it in a file named by password_file", ErrBadURL, redact(u))
		}
	}
	if !validAddr(r.from) {
		return nil, fmt.Errorf("%w: %s: from=%q is not an address (user@domain)", ErrBadURL, redact(u), r.from)
	}
	for _, t := range strings.Split(q.Get("to"), ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if !validAddr(t) {
			return nil, fmt.Errorf("%w: %s: to=%q is not an address (user@domain)", ErrBadURL, redact(u), t)
		}
		r.to = append(r.to, t)
	}
	if len(r.to) == 0 {
		return nil, fmt.Errorf("%w: %s: no to= address", ErrBadURL, redact(u))
	}
	for k := range q {
		if !slices.Contains([]string{"from", "to", "password_file"}, k) {
			return nil, fmt.Errorf("%w: %s: unknown parameter %q (from, to, password_file)", ErrBadURL, redact(u), k)
		}
	}
	switch {
	case r.user != "" && r.passFile == "":
		return nil, fmt.Errorf("%w: %s: user %q without password_file", ErrBadURL, redact(u), r.user)
	case r.user == "" && r.passFile != "":
		return nil, fmt.Errorf("%w: %s: password_file without a user (smtp://USER@HOST)", ErrBadURL, redact(u))
	case r.passFile != "":
		if _, err := readPassword(r.passFile); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *smtpReceiver) name() string { return r.nm }

// validAddr reports whether s is a bare mail address, user@domain: one @
// with something on each side and nothing that would break an SMTP
// command or a header (spaces, angle brackets, commas, line breaks). The
// server judges the rest. (net/mail's parser would cost the armv7 binary
// 14 kB for this check.)
func validAddr(s string) bool {
	user, domain, ok := strings.Cut(s, "@")
	return ok && user != "" && domain != "" && !strings.Contains(domain, "@") && !strings.ContainsAny(s, " \t\r\n<>,;:\"()[]")
}

// readPassword reads an SMTP password file: it must exist, be a regular
// file not readable by its group or by others, and hold a password (its
// first line).
func readPassword(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrCredentials, path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w: %s has mode %v: readable by its group or others (chmod 600)", ErrCredentials, path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	if pw = strings.TrimRight(pw, "\r"); pw == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrCredentials, path)
	}
	return pw, nil
}

// send delivers a as one mail to every to= address.
func (r *smtpReceiver) send(ctx context.Context, a Alert) (err error) {
	conn, err := dialContext(ctx, r.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c, err := smtp.NewClient(conn, r.host)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello(helloName()); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		tc := r.tlsConfig
		if tc == nil {
			tc = &tls.Config{ServerName: r.host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(tc); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	} else if !isLoopback(r.host) {
		return fmt.Errorf("%w (%s)", ErrNoSTARTTLS, r.addr)
	}
	if r.user != "" {
		pw, err := readPassword(r.passFile)
		if err != nil {
			return err
		}
		if err := c.Auth(smtp.PlainAuth("", r.user, pw, r.host)); err != nil {
			return fmt.Errorf("%w: AUTH: %w", ErrRejected, err)
		}
	}
	if err := c.Mail(r.from); err != nil {
		return fmt.Errorf("%w: MAIL FROM: %w", ErrRejected, err)
	}
	for _, t := range r.to {
		if err := c.Rcpt(t); err != nil {
			return fmt.Errorf("%w: RCPT TO %s: %w", ErrRejected, t, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("%w: DATA: %w", ErrRejected, err)
	}
	if _, err := w.Write(r.message(a)); err != nil {
		return err
	}
	if err := w.Close(); err != nil { // the server's answer to the message
		return fmt.Errorf("%w: end of DATA: %w", ErrRejected, err)
	}
	_ = c.Quit() // the mail is accepted; a failed QUIT loses nothing
	return nil
}

// helloName is the name the agent greets with: the host's name.
func helloName() string {
	if h, err := os.Hostname(); err == nil && h != "" && !strings.ContainsAny(h, " \r\n") {
		return h
	}
	return "localhost"
}

// message is a's mail: headers (Message-ID from the alert's id: a
// receiver that de-duplicates on it sees one mail per alert) and a plain
// text body.
func (r *smtpReceiver) message(a Alert) []byte {
	var b bytes.Buffer
	hdr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	hdr("From", r.from)
	hdr("To", strings.Join(r.to, ", "))
	hdr("Subject", encodeHeader(oneLine(a.subject())))
	hdr("Date", a.At.Format(time.RFC1123Z))
	hdr("Message-ID", "<"+oneLine(a.ID)+"@hcp-edge>")
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "8bit")
	hdr("X-HCP-Alert-Class", oneLine(string(a.Class)))
	hdr("X-HCP-Alert-Severity", oneLine(string(a.Severity)))
	b.WriteString("\r\n")
	body := textBody(a)
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n"))
	return b.Bytes()
}

// encodeHeader is s as a header value: as is when it is printable ASCII,
// else one RFC 2047 encoded word (UTF-8, base64). Header lines may be long;
// servers take up to 998 octets.
func encodeHeader(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return "=?utf-8?b?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
		}
	}
	return s
}

// oneLine strips line breaks (no header injection).
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// textBody is a's plain-text rendering.
func textBody(a Alert) string {
	var b strings.Builder
	b.WriteString(a.Title + "\n")
	if a.Text != "" {
		b.WriteString("\n" + a.Text + "\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "class:    %s\nseverity: %s\n", a.Class, a.Severity)
	if a.Key != "" {
		fmt.Fprintf(&b, "key:      %s\n", a.Key)
	}
	fmt.Fprintf(&b, "at:       %s\n", a.At.UTC().Format(time.RFC3339))
	if a.Count > 1 {
		fmt.Fprintf(&b, "count:    %d occurrences, the last at %s\n", a.Count, a.Last.UTC().Format(time.RFC3339))
	}
	for _, k := range sortedKeys(a.Fields) {
		fmt.Fprintf(&b, "%s: %s\n", k, a.Fields[k])
	}
	fmt.Fprintf(&b, "id:       %s\n", a.ID)
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
