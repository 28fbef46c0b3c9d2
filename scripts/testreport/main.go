// Command testreport reads `go test -json` on its standard input and prints
// what a person needs from a whole-suite run: each package's result, the
// output of every failed test, the tests that skipped and why (grouped by
// reason), the slowest tests, and a closing "N passed, N failed, N skipped"
// line. It exits 1 when a test or a package failed, and when a test went on
// after one of its subtests skipped: a skipped prerequisite must skip the
// whole test, naming the peer it lacks, never leave the parent asserting on
// outputs that were never produced (issue 40).
//
//	go test -json ./... | go run ./scripts/testreport -slowest 10
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json), or of the build
// output go test interleaves with it (Action "build-output", ImportPath).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// key names a test in its package.
type key struct{ pkg, test string }

// result is what the run said of one test.
type result struct {
	action  string
	elapsed float64
	output  strings.Builder
}

// report is the whole run.
type report struct {
	tests    map[key]*result
	order    []key
	packages map[string]*result
	pkgOrder []string
}

// read consumes the events, printing as they end each package's result line
// and each failed test's output, so a long run shows its progress.
func read(r io.Reader, w io.Writer) (*report, error) {
	rep := &report{tests: map[key]*result{}, packages: map[string]*result{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(os.Stderr, "%s\n", line) // a build error printed outside the JSON
			continue
		}
		if e.Action == "build-output" { // a compile error: shown as it comes
			fmt.Fprint(w, e.Output)
			continue
		}
		if e.ImportPath != "" && e.Package == "" { // build-fail and the like
			continue
		}
		var res *result
		if e.Test == "" {
			res = rep.packages[e.Package]
			if res == nil {
				res = &result{}
				rep.packages[e.Package] = res
				rep.pkgOrder = append(rep.pkgOrder, e.Package)
			}
		} else {
			k := key{e.Package, e.Test}
			res = rep.tests[k]
			if res == nil {
				res = &result{}
				rep.tests[k] = res
				rep.order = append(rep.order, k)
			}
		}
		switch e.Action {
		case "output":
			res.output.WriteString(e.Output)
		case "pass", "fail", "skip":
			res.action, res.elapsed = e.Action, e.Elapsed
			switch {
			case e.Test != "" && e.Action == "fail":
				fmt.Fprintf(w, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, res.output.String())
			case e.Test == "":
				rep.printPackage(w, e.Package, res)
			}
		}
	}
	return rep, sc.Err()
}

// orphans are the tests that passed or failed although a direct subtest of
// theirs skipped.
func (rep *report) orphans() []key {
	var out []key
	for _, k := range rep.order {
		parent, _, ok := cutLast(k.test)
		if !ok || rep.tests[k].action != "skip" {
			continue
		}
		p := rep.tests[key{k.pkg, parent}]
		if p != nil && p.action != "skip" && p.action != "" {
			out = append(out, k)
		}
	}
	return out
}

func cutLast(test string) (parent, sub string, ok bool) {
	i := strings.LastIndexByte(test, '/')
	if i < 0 {
		return "", "", false
	}
	return test[:i], test[i+1:], true
}

// skipReason is the last line of a skipped test's output that says why.
func skipReason(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "===") {
			continue
		}
		if _, after, ok := strings.Cut(l, ".go:"); ok { // "file.go:12: reason"
			if _, reason, ok := strings.Cut(after, ": "); ok {
				return reason
			}
		}
		return l
	}
	return "(no reason given)"
}

func main() {
	slowest := flag.Int("slowest", 10, "list this many of the slowest top-level tests")
	skips := flag.Bool("skips", true, "list the skipped top-level tests, grouped by reason")
	flag.Parse()
	rep, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	os.Exit(rep.print(os.Stdout, *slowest, *skips))
}

// print writes the report and returns the exit code.
func (rep *report) print(w io.Writer, slowest int, skips bool) int {
	code := 0
	var passed, failed, skipped int
	var top []key
	for _, k := range rep.order {
		switch rep.tests[k].action {
		case "pass":
			passed++
		case "fail":
			failed++
		case "skip":
			skipped++
		}
		if !strings.Contains(k.test, "/") {
			top = append(top, k)
		}
	}
	for _, p := range rep.pkgOrder {
		if rep.packages[p].action == "fail" {
			code = 1
		}
	}
	if skips {
		byReason := map[string][]string{}
		for _, k := range top {
			if r := rep.tests[k]; r.action == "skip" {
				reason := skipReason(r.output.String())
				byReason[reason] = append(byReason[reason], k.test)
			}
		}
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		if len(reasons) > 0 {
			fmt.Fprintln(w, "\nskipped top-level tests, by reason:")
		}
		for _, r := range reasons {
			names := byReason[r]
			sort.Strings(names)
			fmt.Fprintf(w, "  %3d  %s\n       %s\n", len(names), r, strings.Join(names, " "))
		}
	}
	if slowest > 0 {
		sort.SliceStable(top, func(i, j int) bool { return rep.tests[top[i]].elapsed > rep.tests[top[j]].elapsed })
		fmt.Fprintf(w, "\nslowest %d top-level tests:\n", min(slowest, len(top)))
		for _, k := range top[:min(slowest, len(top))] {
			r := rep.tests[k]
			fmt.Fprintf(w, "  %8s  %-4s  %s  %s\n", (time.Duration(r.elapsed * float64(time.Second))).Round(10*time.Millisecond), r.action, k.test, strings.TrimPrefix(k.pkg, "hcp-edge/"))
		}
	}
	if orph := rep.orphans(); len(orph) > 0 {
		code = 1
		fmt.Fprintln(w, "\ntests that went on after a subtest skipped (skip the whole test at its prerequisite, e.g. amqptest.Require):")
		for _, k := range orph {
			fmt.Fprintf(w, "  %s (%s): %s\n", k.test, k.pkg, skipReason(rep.tests[k].output.String()))
		}
	}
	if failed > 0 {
		code = 1
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return code
}

// printPackage prints a package's result line as `go test` does, and a
// failed package's own output when it has no test to carry it (a build
// error, a panic in TestMain).
func (rep *report) printPackage(w io.Writer, p string, r *result) {
	switch r.action {
	case "fail":
		fmt.Fprintf(w, "FAIL\t%s\t%.1fs\n", p, r.elapsed)
		if !hasTests(rep, p) {
			fmt.Fprint(w, r.output.String())
		}
	case "pass":
		fmt.Fprintf(w, "ok  \t%s\t%.1fs\n", p, r.elapsed)
	}
}

func hasTests(rep *report, pkg string) bool {
	for _, k := range rep.order {
		if k.pkg == pkg {
			return true
		}
	}
	return false
}
