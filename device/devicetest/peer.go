package devicetest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequirePeersEnv is the environment variable that turns every peer skip into a
// failure. `make ci` sets it to 1, so nothing that needs a peer program, a pty or
// a broker can silently not run there.
const RequirePeersEnv = "HCP_REQUIRE_PEERS"

// PeersRequired reports whether HCP_REQUIRE_PEERS=1 is set.
func PeersRequired() bool { return os.Getenv(RequirePeersEnv) == "1" }

// HidePeersEnv is the environment variable that makes every peer look
// missing, installed or not: `make test-bare` (part of `make ci`) sets it to
// 1, inside a network namespace with only loopback, to run the suite as a
// machine with nothing but Go sees it. Every lookup of a peer program, a
// Python module or an npm package goes through LookPath, PythonImport or
// Hidden here (the broker's through transport/amqp/amqptest, which
// restates the rule), so a new peer test is covered by calling them.
const HidePeersEnv = "HCP_HIDE_PEERS"

// PeersHidden reports whether HCP_HIDE_PEERS=1 is set.
func PeersHidden() bool { return os.Getenv(HidePeersEnv) == "1" }

// Hidden stops the test through MissingPeer when peers are hidden
// (HCP_HIDE_PEERS=1): call it before looking up a peer by other means than
// LookPath or PythonImport (an npm package in a cache, a file on disk).
func Hidden(t testing.TB, what, fix string) {
	t.Helper()
	if PeersHidden() {
		MissingPeer(t, what+" (hidden: "+HidePeersEnv+"=1)", fix)
	}
}

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
	Hidden(t, program, "apt-get install "+debianPackage)
	p, err := exec.LookPath(program)
	if err != nil {
		MissingPeer(t, program+" not found on PATH", "apt-get install "+debianPackage)
	}
	return p
}

// debianPython is the interpreter the peer tests use: Debian's, where apt installs the
// python3-* modules, whatever python3 comes first on PATH.
const debianPython = "/usr/bin/python3"

// pythonModulePackages names the Debian package that provides a Python module the peer
// tests import, directly or through another module (pymodbus 3.0 imports serial and
// serial_asyncio, which python3-pymodbus only recommends).
var pythonModulePackages = map[string]string{
	"pymodbus":       "python3-pymodbus",
	"serial":         "python3-serial",
	"serial_asyncio": "python3-serial-asyncio",
	"pika":           "python3-pika",
}

// PythonImport returns the path of Debian's python3 once `import module` works in it, or
// stops the test through MissingPeer naming the import that failed, Python's own last
// line of error, and the Debian package of the module that is actually missing (which may
// not be the one imported: `import pymodbus.server` fails on a missing `serial`).
func PythonImport(t testing.TB, module, debianPackage string) string {
	t.Helper()
	Hidden(t, "the Python module "+module, "apt-get install "+debianPackage)
	py := LookPath(t, debianPython, "python3")
	out, err := exec.Command(py, "-c", "import "+module).CombinedOutput()
	if err == nil {
		return py
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	pkg := debianPackage
	if _, missing, ok := strings.Cut(last, "No module named '"); ok {
		top, _, _ := strings.Cut(strings.TrimSuffix(missing, "'"), ".")
		if p, known := pythonModulePackages[top]; known {
			pkg = p
		} else {
			pkg = "the package that provides the Python module " + top
		}
	}
	MissingPeer(t, fmt.Sprintf("%s -c 'import %s' failed: %s", py, module, last), "apt-get install "+pkg)
	return ""
}

// SoakEnv is the environment variable that turns on the long statistics:
// the 100-run leak checks, property runs beyond their default size. `make
// soak` sets it to 1; `make test` and `make ci` run the default sizes, which
// still exercise every behaviour those tests guard.
const SoakEnv = "HCP_SOAK"

// Soak reports whether HCP_SOAK=1 is set.
func Soak() bool { return os.Getenv(SoakEnv) == "1" }

// Runs is how many times a statistical test repeats its trial: def by
// default, soak under HCP_SOAK=1, and the positive integer in the
// environment variable override when that is set (a malformed one fails the
// test). -short caps def at short.
func Runs(t testing.TB, override string, short, def, soak int) int {
	t.Helper()
	if s := os.Getenv(override); s != "" {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", override, s)
		}
		return n
	}
	switch {
	case Soak():
		return soak
	case testing.Short():
		return min(short, def)
	}
	return def
}
