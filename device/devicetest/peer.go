package devicetest

import (
	"os"
	"os/exec"
	"testing"
)

// RequirePeersEnv is the environment variable that turns every peer skip into a
// failure. `make ci` sets it to 1, so nothing that needs a peer program, a pty or
// a broker can silently not run there.
const RequirePeersEnv = "HCP_REQUIRE_PEERS"

// PeersRequired reports whether HCP_REQUIRE_PEERS=1 is set.
func PeersRequired() bool { return os.Getenv(RequirePeersEnv) == "1" }

// MissingPeer stops the test because something it needs from outside the Go
// toolchain is missing: with HCP_REQUIRE_PEERS=1 it fails, otherwise it skips,
// loudly, naming what is missing and how to get it.
func MissingPeer(t testing.TB, what, fix string) {
	t.Helper()
	msg := "PEER MISSING: " + what + " (" + fix + "); run `make ci` to install peers and run this test"
	if PeersRequired() {
		t.Fatal(msg + " — failing because " + RequirePeersEnv + "=1")
	}
	t.Skip(msg)
}

// LookPath returns the path of program, or stops the test through MissingPeer
// with the Debian package that provides it.
func LookPath(t testing.TB, program, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		MissingPeer(t, program+" not found on PATH", "apt-get install "+debianPackage)
	}
	return p
}
