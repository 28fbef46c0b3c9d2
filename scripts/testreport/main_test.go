package main

import (
	"bytes"
	"strings"
	"testing"
)

// run is a `go test -json` stream: a parent that went on after its subtest
// skipped, a test that skipped whole, one that passed.
const run = `{"Action":"run","Package":"p","Test":"TestParent"}
{"Action":"run","Package":"p","Test":"TestParent/sub"}
{"Action":"output","Package":"p","Test":"TestParent/sub","Output":"    x_test.go:12: PEER MISSING: RabbitMQ (bash scripts/broker.sh)\n"}
{"Action":"skip","Package":"p","Test":"TestParent/sub","Elapsed":0.1}
{"Action":"pass","Package":"p","Test":"TestParent","Elapsed":0.2}
{"Action":"output","Package":"p","Test":"TestWhole","Output":"    y_test.go:3: PEER MISSING: mbpoll\n"}
{"Action":"skip","Package":"p","Test":"TestWhole","Elapsed":0}
{"Action":"pass","Package":"p","Test":"TestOK","Elapsed":3}
{"Action":"pass","Package":"p","Elapsed":3.5}
`

func TestOrphanedParentFails(t *testing.T) {
	var live, out bytes.Buffer
	rep, err := read(strings.NewReader(run), &live)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(live.String(), "ok  \tp\t3.5s") {
		t.Fatalf("package line: %q", live.String())
	}
	if code := rep.print(&out, 2, true); code != 1 {
		t.Fatalf("exit %d, want 1 for a parent that went on after a skipped subtest\n%s", code, out.String())
	}
	for _, want := range []string{"TestParent/sub (p): PEER MISSING: RabbitMQ", "1  PEER MISSING: mbpoll", "3s  pass  TestOK", "2 passed, 0 failed, 2 skipped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCleanRunPasses(t *testing.T) {
	clean := strings.ReplaceAll(run, `"Action":"pass","Package":"p","Test":"TestParent"`, `"Action":"skip","Package":"p","Test":"TestParent"`)
	rep, err := read(strings.NewReader(clean), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := rep.print(&out, 0, false); code != 0 {
		t.Fatalf("exit %d on a clean run:\n%s", code, out.String())
	}
}

// TestBuildErrorShown: a compile error's lines reach the report.
func TestBuildErrorShown(t *testing.T) {
	in := `{"ImportPath":"p [p.test]","Action":"build-output","Output":"x_test.go:16:2: \"q\" imported and not used\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p","Elapsed":0}
`
	var live bytes.Buffer
	rep, err := read(strings.NewReader(in), &live)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(live.String(), `x_test.go:16:2: "q" imported and not used`) {
		t.Fatalf("no build error in %q", live.String())
	}
	if code := rep.print(&bytes.Buffer{}, 0, false); code != 1 {
		t.Fatalf("exit %d on a build failure", code)
	}
}
