package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpExitsZero: -h and --help on every verb print its usage on stdout and
// exit 0 (help asked for is output, not an error); an unknown flag or a stray
// argument is a usage error, exit 2, with the problem on stderr.
func TestHelpExitsZero(t *testing.T) {
	verbs := [][]string{
		{}, {"run"}, {"estop"}, {"status"}, {"tools"}, {"reset"}, {"arm"}, {"submit"},
		{"approve"}, {"deny"}, {"abort"}, {"pause"}, {"resume"}, {"sessions"},
		{"artifact"}, {"artifact", "get"}, {"access"}, {"access", "list"}, {"access", "approve"}, {"access", "deny"}, {"access", "withdraw"}, {"audit"}, {"audit", "verify"}, {"audit", "replay"},
		{"envelope"}, {"envelope", "coverage"}, {"config"}, {"config", "check"}, {"probe"},
		{"broker"}, {"broker", "provision"}, {"takeover"}, {"handback"}, {"owner"},
		{"recipe", "simulate"}, {"whoami"}, {"alert"}, {"alert", "test"}, {"answer"},
	}
	for _, v := range verbs {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, v...), h)
			var out, errb bytes.Buffer
			code := run(context.Background(), args, &out, &errb)
			if code != exitOK || !strings.Contains(strings.ToLower(out.String()), "usage") || errb.Len() != 0 {
				t.Errorf("hcp-edge %s: exit %d, stdout %q, stderr %q; want 0, the usage on stdout, nothing on stderr",
					strings.Join(args, " "), code, firstLine(out.String()), errb.String())
			}
		}
	}
	for _, args := range [][]string{
		{"status", "--no-such-flag"}, {"status", "extra"}, {"tools", "extra"}, {"tools", "--no-such-flag"}, {"estop", "--json=maybe"},
		{"sessions", "x"}, {"audit", "verify", "x"}, {"access"}, {"access", "nonsense"}, {"access", "list", "x"},
		{"access", "approve", "acc-1"}, {"access", "approve", "--operator", "olga"}, {"access", "approve", "acc-1", "--operator", "olga", "--for", "soon"},
		{"access", "deny", "acc-1", "--operator", "olga"}, {"access", "withdraw", "acc-1", "--operator", "olga"}, {"access", "withdraw", "--operator", "olga", "--reason", "x"},
		{"whoami", "extra"}, {"whoami", "--no-such-flag"}, {"config", "check", "a", "b"}, {"audit"}, {"nonsense"}, {"broker"}, {"broker", "provision"}, {"broker", "provision", "--config", "x", "stray"},
		{"answer"}, {"answer", "s1", "ckpt-000001"}, {"answer", "s1", "ckpt-000001", "yes", "extra"},
		{"takeover"}, {"takeover", "s1"}, {"handback", "s1"}, {"owner"}, {"owner", "a", "b"}, {"owner", "s1", "--operator", "x"},
		{"recipe", "simulate"}, {"recipe", "simulate", "a", "b"}, {"recipe", "simulate", "--inputs", "{", "rig-status"},
		{"alert"}, {"alert", "send"}, {"alert", "test", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != exitUsage || errb.Len() == 0 {
			t.Errorf("hcp-edge %s: exit %d, stderr %q; want 2 with the problem on stderr", strings.Join(args, " "), code, errb.String())
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
