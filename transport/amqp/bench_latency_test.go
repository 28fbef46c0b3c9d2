package amqp_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// BenchmarkLatency: end-to-end latency of events from their creation (the
// CreatedUnixNano given to Append) to their arrival at a consumer of the
// caller's queue on the loopback broker, through the outbox and the
// Publisher. rate=200 appends at a steady 200 events/s (a session's real
// rate); rate=max appends back to back (saturation, latency includes the
// queueing). Reports p50, p99 and max in ms, the Append call's own p50 and
// p99 (what the producing session waits), and the bbolt commits per event
// (each is two fdatasyncs: what the outbox costs the disk).
func BenchmarkLatency(b *testing.B) {
	for _, tc := range []struct {
		name    string
		rate, n int
	}{{"rate=200", 200, 600}, {"rate=max", 0, 2000}} {
		b.Run(tc.name, func(b *testing.B) { latency(b, tc.rate, tc.n) })
	}
}

func latency(b *testing.B, rate, n int) {
	conn := amqptest.Dial(b, amqptest.URL())
	cconn := amqptest.Dial(b, amqptest.AlphaURL()) // the consumer (the caller) has a connection of its own
	caller := amqptest.AlphaID
	benchQueue(b, conn, caller)
	qname, _ := wire.EventQueue(caller)
	cch, err := cconn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	deliveries, err := cch.Consume(qname, "", true, true, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	ob, _ := benchOutbox(b)
	pub, err := tamqp.NewPublisher(ob, tamqp.PublisherOpts{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pub.Run(ctx, conn) }()
	defer func() { cancel(); wg.Wait() }()

	var e2e, app []time.Duration
	var total time.Duration
	commits := 0
	for b.Loop() {
		b.StopTimer()
		ms := benchEvents(b, caller, n)
		idx := make(map[string]int, n)
		for i, m := range ms {
			idx[m.MessageID] = i
		}
		created := make([]atomic.Int64, n)
		got := make(chan []time.Duration, 1)
		go func() {
			ls := make([]time.Duration, 0, n)
			deadline := time.After(2 * time.Minute)
			for len(ls) < n {
				select {
				case d, ok := <-deliveries:
					if !ok {
						got <- ls
						return
					}
					at := time.Now()
					if i, ok := idx[d.MessageId]; ok {
						ls = append(ls, at.Sub(time.Unix(0, created[i].Load())))
					}
				case <-deadline:
					got <- ls
					return
				}
			}
			got <- ls
		}()
		b.StartTimer()
		c0 := txid(b, ob)
		start := time.Now()
		var tick *time.Ticker
		if rate > 0 {
			tick = time.NewTicker(time.Second / time.Duration(rate))
		}
		for i := range ms {
			if tick != nil {
				<-tick.C
			}
			t0 := time.Now()
			ms[i].CreatedUnixNano = t0.UnixNano()
			created[i].Store(ms[i].CreatedUnixNano)
			if _, err := ob.Append(ms[i]); err != nil {
				b.Fatal(err)
			}
			app = append(app, time.Since(t0))
		}
		if tick != nil {
			tick.Stop()
		}
		ls := <-got
		total += time.Since(start)
		waitEmpty(b, ob) // the deletions of the confirmed events are commits too
		commits += txid(b, ob) - c0
		if len(ls) != n {
			b.Fatalf("%d of %d events arrived", len(ls), n)
		}
		e2e = append(e2e, ls...)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(quantile(e2e, 0.50)), "p50-ms")
	b.ReportMetric(ms(quantile(e2e, 0.99)), "p99-ms")
	b.ReportMetric(ms(quantile(e2e, 1)), "max-ms")
	b.ReportMetric(ms(quantile(app, 0.50)), "append-p50-ms")
	b.ReportMetric(ms(quantile(app, 0.99)), "append-p99-ms")
	b.ReportMetric(float64(len(e2e))/total.Seconds(), "events/s")
	b.ReportMetric(float64(commits)/float64(len(e2e)), "commits/event")
}

// quantile returns the q-quantile (0 < q <= 1) of ds by the nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
