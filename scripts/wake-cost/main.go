// Command wakecost is the Go peer of c/poll.c (scripts/wake-cost/run.sh):
// Modbus TCP reads (FC 04, 9 registers, unit 1) against rig-sim at a fixed
// total rate. -g goroutines share the rate, each with its own connection and
// ticker (as the agent's pollers do); -g 1 is one goroutine doing every
// exchange; -stagger offsets their phases evenly over the period.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

func main() {
	port := flag.Int("port", 5020, "")
	rate := flag.Int("rate", 170, "exchanges per second in total")
	secs := flag.Int("secs", 20, "")
	g := flag.Int("g", 1, "goroutines")
	stagger := flag.Bool("stagger", false, "offset the goroutines' phases evenly")
	flag.Parse()
	var wg sync.WaitGroup
	for i := 0; i < *g; i++ {
		wg.Add(1)
		go func() {
			if *stagger {
				time.Sleep(time.Duration(i) * time.Second / time.Duration(*rate))
			}
			defer wg.Done()
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
			if err != nil {
				panic(err)
			}
			per := *rate / *g
			t := time.NewTicker(time.Second / time.Duration(per))
			defer t.Stop()
			req := []byte{0, 0, 0, 0, 0, 6, 1, 4, 0, 0, 0, 9}
			rsp := make([]byte, 27)
			for n := 0; n < per**secs; n++ {
				<-t.C
				req[1]++
				c.SetDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(req); err != nil {
					panic(err)
				}
				if _, err := io.ReadFull(c, rsp); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
}
