package alert

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/device/devicetest"
	"hcp-edge/transport/amqp/amqptest"
)

// TestSMTPStartTLS: against aiosmtpd offering STARTTLS (and refusing mail
// before it), the mail goes over TLS, the server's certificate checked.
func TestSMTPStartTLS(t *testing.T) {
	py := devicetest.PythonImport(t, "aiosmtpd", "python3-aiosmtpd")
	ca := amqptest.NewCA(t, "alert-test-ca")
	_, _, certFile, keyFile := ca.Issue("localhost", x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	port := freePort(t)
	dir := filepath.Join(t.TempDir(), "maildir")
	cmd := exec.Command(py, "-m", "aiosmtpd", "-n", "-l", "127.0.0.1:"+strconv.Itoa(port), "--tlscert", certFile, "--tlskey", keyFile,
		"-c", "aiosmtpd.handlers.Mailbox", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	r, err := newReceiver(ReceiverConfig{URL: "smtp://127.0.0.1:" + strconv.Itoa(port) + "/?from=rig@example.org&to=oncall@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	sr := r.(*smtpReceiver)
	sr.tlsConfig = &tls.Config{ServerName: "127.0.0.1", RootCAs: pool, MinVersion: tls.VersionTLS12}
	al := leak()
	al.ID, al.At, al.Count = "tls-1", time.Now(), 1
	waitFor(t, "a mail over STARTTLS", func() bool {
		ctx, cancel := contextWithTimeout(5 * time.Second)
		defer cancel()
		return sr.send(ctx, al) == nil
	})
	waitFor(t, "the mail stored", func() bool { return len(mails(filepath.Join(dir, "new"))) == 1 })

	// A certificate the client does not trust: refused, nothing sent.
	sr.tlsConfig = &tls.Config{ServerName: "127.0.0.1", RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	ctx, cancel := contextWithTimeout(5 * time.Second)
	defer cancel()
	if err := sr.send(ctx, al); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("untrusted certificate: %v", err)
	}
}

// TestSMTPNoSTARTTLSRefused: a server off the loopback interface that does
// not offer STARTTLS gets nothing: ErrNoSTARTTLS before MAIL FROM.
func TestSMTPNoSTARTTLSRefused(t *testing.T) {
	var ip net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP
			break
		}
	}
	if ip == nil {
		t.Skip("SKIP: no non-loopback IPv4 address on this host")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Skipf("SKIP: cannot listen on %s: %v", ip, err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() { // a plain SMTP server: greets, answers EHLO without STARTTLS, logs what it hears
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("220 plain ESMTP\r\n"))
		br := bufio.NewReader(c)
		var heard []string
		for {
			ln, err := br.ReadString('\n')
			if err != nil {
				break
			}
			heard = append(heard, strings.TrimSpace(ln))
			switch {
			case strings.HasPrefix(ln, "EHLO"):
				_, _ = c.Write([]byte("250-plain\r\n250 8BITMIME\r\n"))
			case strings.HasPrefix(ln, "QUIT"):
				_, _ = c.Write([]byte("221 bye\r\n"))
			default:
				_, _ = c.Write([]byte("250 ok\r\n"))
			}
		}
		got <- strings.Join(heard, "|")
	}()
	r, err := newReceiver(ReceiverConfig{URL: "smtp://" + l.Addr().String() + "/?from=rig@example.org&to=oncall@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithTimeout(5 * time.Second)
	defer cancel()
	if err := r.send(ctx, leak()); !errors.Is(err, ErrNoSTARTTLS) {
		t.Fatalf("send: %v, want ErrNoSTARTTLS", err)
	}
	if h := <-got; strings.Contains(h, "MAIL") || strings.Contains(h, "AUTH") {
		t.Errorf("the server heard %q", h)
	}
}
