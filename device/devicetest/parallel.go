package devicetest

import (
	"flag"
	"runtime"
	"strconv"
)

// WidenParallel raises -test.parallel to n for a package whose parallel
// tests wait (on a scaled clock, a simulator, a subprocess or a broker)
// far more than they compute, so that more of them than cores (go test's
// default) run side by side. A -test.parallel given on the command line,
// or a GOMAXPROCS of n or more, is left as it is. Call it first in
// TestMain, before m.Run.
func WidenParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && runtime.GOMAXPROCS(0) < n {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
