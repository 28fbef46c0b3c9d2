package alert

import (
	"errors"
	"strings"
	"testing"
)

// FuzzReceiverURL: no receiver URL panics the parser; a refusal is
// ErrBadURL or ErrCredentials and never shows a password given in the URL.
func FuzzReceiverURL(f *testing.F) {
	for _, s := range []string{
		"smtp://u@mail.example.org:587/?from=a@example.org&to=b@example.org&password_file=/nonexistent",
		"smtp://127.0.0.1:25/?from=a@example.org&to=b@example.org,c@example.org",
		"smtp://u:hunter2@h/?from=a@b&to=c@d", "https://hooks.example.org/T0/B0/xyz", "http://[::1]:8080/x",
		"https://%zz", "ftp://h/x", "", "smtp://h/?from=a&to=b", "smtp://h/?from=a@b&to=c@d&x=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		_, err := newReceiver(ReceiverConfig{URL: u})
		if err == nil {
			return
		}
		if !errors.Is(err, ErrBadURL) && !errors.Is(err, ErrCredentials) {
			t.Fatalf("%q: %v is neither ErrBadURL nor ErrCredentials", u, err)
		}
		if strings.Contains(u, ":hunter2@") && strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%q: the error shows the password: %v", u, err)
		}
	})
}
