package metrics

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
)

// The Go runtime and process families, read at each scrape: the subset of
// client_golang's Go and process collectors that a technician looks at
// (docs/METRICS.md lists them). Runtime figures come from runtime/metrics,
// which does not stop the world; process figures from /proc/self (Linux;
// elsewhere they are left out).

// runtimeSamples are the runtime/metrics read for the go_* families.
var runtimeSamples = []struct{ key, name, help, typ string }{
	{"/sched/goroutines:goroutines", "go_goroutines", "Number of goroutines that currently exist.", "gauge"},
	{"/memory/classes/heap/objects:bytes", "go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", "gauge"},
	{"/memory/classes/total:bytes", "go_memstats_sys_bytes", "Number of bytes obtained from the system.", "gauge"},
	{"/gc/heap/allocs:bytes", "go_memstats_alloc_bytes_total", "Total number of bytes allocated, even if freed.", "counter"},
	{"/gc/cycles/total:gc-cycles", "go_gc_cycles_total", "Number of completed GC cycles.", "counter"},
	{"/gc/gogc:percent", "go_gc_gogc_percent", "Heap size target percentage (GOGC).", "gauge"},
	{"/gc/gomemlimit:bytes", "go_gc_gomemlimit_bytes", "Go runtime memory limit (GOMEMLIMIT).", "gauge"},
}

func writeRuntime(w *expoWriter) {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, r := range runtimeSamples {
		s[i].Name = r.key
	}
	metrics.Read(s)
	for i, r := range runtimeSamples {
		var v float64
		switch s[i].Value.Kind() {
		case metrics.KindUint64:
			v = float64(s[i].Value.Uint64())
		case metrics.KindFloat64:
			v = s[i].Value.Float64()
		default:
			continue // not in this Go version
		}
		w.single(r.name, r.help, r.typ, v)
	}
	w.single("go_threads", "Number of OS threads created.", "gauge", float64(threads()))
	w.header("go_info", "Information about the Go environment.", "gauge")
	w.sample("go_info", "", []string{"version"}, []string{runtime.Version()}, "", "", 1)
}

func threads() int {
	n, _ := runtime.ThreadCreateProfile(nil)
	return n
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// writeProcess writes the process_* families from /proc/self; a file that
// cannot be read leaves its families out.
func writeProcess(w *expoWriter) {
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		// The fields after the command, which is in parentheses and may hold spaces.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 {
			f := strings.Fields(string(stat[i+1:]))
			// f[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
			if len(f) > 21 {
				utime, _ := strconv.ParseFloat(f[11], 64)
				stime, _ := strconv.ParseFloat(f[12], 64)
				start, _ := strconv.ParseFloat(f[19], 64)
				vsize, _ := strconv.ParseFloat(f[20], 64)
				rss, _ := strconv.ParseFloat(f[21], 64)
				w.single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", (utime+stime)/clockTicks)
				w.single("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", rss*float64(os.Getpagesize()))
				w.single("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", vsize)
				if bt := bootTime(); bt > 0 {
					w.single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge", bt+start/clockTicks)
				}
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		w.single("process_open_fds", "Number of open file descriptors.", "gauge", float64(len(fds)))
	}
}

// bootTime is btime of /proc/stat, in seconds since the epoch; 0 if unknown.
func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			t, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return t
		}
	}
	return 0
}
