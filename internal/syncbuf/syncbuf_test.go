package syncbuf

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentWriteRead: writes from one goroutine and reads from another
// are race-free (run with -race) and nothing written is lost.
func TestConcurrentWriteRead(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			fmt.Fprintf(&b, "%03d\n", i%1000)
		}
	}()
	for i := 0; i < 100; i++ {
		_ = b.String()
		_ = b.Len()
	}
	wg.Wait()
	if b.Len() != 4000 {
		t.Fatalf("len %d, want 4000", b.Len())
	}
}
