// Command spin is the CPU-bound loop that TestPiSim times natively, under
// qemu-arm-static and under a CPU quota to measure how much slower the
// emulated host is: integer arithmetic, sorting, map inserts and small
// allocations on one goroutine, the kind of work the agent's own code does.
// It prints the loop's wall time in nanoseconds (start-up excluded).
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"
)

func main() {
	rounds := 40
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil && n > 0 {
			rounds = n
		}
	}
	t0 := time.Now()
	x := uint32(2463534242)
	sum := 0
	for r := 0; r < rounds; r++ {
		s := make([]uint32, 4096)
		m := make(map[uint32]int, 512)
		for i := range s {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			s[i] = x
			if i%8 == 0 {
				m[x%4093] += i
			}
		}
		slices.Sort(s)
		b := []byte{}
		for i := 0; i < 256; i++ {
			b = strconv.AppendUint(b[:0], uint64(s[i*16]), 10)
			sum += len(b)
		}
		sum += len(m) + int(s[len(s)/2]&7)
	}
	el := time.Since(t0)
	fmt.Printf("%d %d\n", el.Nanoseconds(), sum)
}
